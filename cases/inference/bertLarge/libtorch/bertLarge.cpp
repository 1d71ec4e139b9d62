// BERT-Large masked-LM inference, as FlagPerf's bertLarge case (Hugging Face's BertForMaskedLM,
// 512 tokens, top-1 accuracy at the masked positions): the model is the bert training case's
// (models/bert.h) at bert-large-uncased's sizes, the data sequences of a WordPiece token dataset
// ([CLS] span [SEP], padded, 15 % of the real tokens masked 80/10/10 with a fixed seed) or
// synthetic tokens labelled as such. An input sample is (2, seq_length): the ids, and 1 at real
// tokens / 0 at padding; the outputs are the most likely token at every position.

#include <torch/torch.h>

#include "xpuperf/datasets/token_datasets.h"
#include "xpuperf/infer/case_weights.h"
#include "xpuperf/infer/inference_case.h"
#include "xpuperf/models/bert.h"

namespace xpuperf::cases {
namespace {
using models::BertConfig;
using models::BertForMaskedLM;
using models::BertForMaskedLMImpl;

BertConfig bert_config(const Config& cfg) {
  BertConfig c = models::bert_config_from(cfg, BertConfig::large());
  c.dropout = c.attention_dropout = 0.0;
  return c;
}

class BertLargeInference : public infer::InferenceCase {
 public:
  infer::Batches build_dataloader(const infer::InferContext& ctx) override {
    const Config& cfg = ctx.config;
    config_ = bert_config(cfg);
    length_ = cfg.get_int("seq_length", 512);
    if (length_ < 8 || length_ > config_.positions)
      throw ConfigError(cfg.at("seq_length").source.str() + ": seq_length must be in [8, max_position_embeddings = " +
                        std::to_string(config_.positions) + "], got " + std::to_string(length_));
    const std::int64_t batch = cfg.get_int("batch_size");
    if (batch <= 0) throw ConfigError("batch_size must be positive");
    synthetic_ = cfg.get_bool("synthetic_data", false);
    // The training cases' reader: the same held-out documents the bert case validates on.
    const nlohmann::json no_switches = nlohmann::json::object();  // an inference case takes no training switch
    const datasets::CaseContext data_ctx{cfg, no_switches, torch::kCPU, 0, 1, 1};
    const auto corpus = datasets::open_token_corpus(data_ctx, "wordpiece", config_.vocab);
    const text::BertSamples::Special special{corpus.cls, corpus.sep, corpus.mask, corpus.pad,
                                             static_cast<std::int32_t>(config_.vocab)};
    const auto seed = static_cast<std::uint64_t>(cfg.get_int("seed", 1234));
    auto dataset = std::make_shared<datasets::BertTokenDataset>(corpus.eval, length_, special, seed, false);
    std::int64_t samples = dataset->size();
    if (const std::int64_t limit = cfg.get_int("max_samples", 0); limit > 0) samples = std::min(samples, limit);
    if (samples == 0) throw ConfigError("the evaluation data (" + dataset->description() + ") holds no sequence");
    infer::Batches b;
    b.samples = samples;
    b.batch_size = batch;
    b.count = static_cast<std::size_t>((samples + batch - 1) / batch);
    b.sample_shape = {2, length_};
    b.sample_dtype = torch::kLong;
    b.description = dataset->description() + ": " + std::to_string(samples) + " sequences of " +
                    std::to_string(length_) + " tokens, 15 % masked (seed " + std::to_string(seed) + ")";
    b.load = [dataset, batch, samples](std::size_t i) {
      const std::int64_t at = static_cast<std::int64_t>(i) * batch;
      const auto batch_of = dataset->get(torch::arange(at, std::min(at + batch, samples), torch::kLong));
      // ids, types (0), keep, labels
      return infer::Batch{torch::stack({batch_of[0], batch_of[2].to(torch::kLong)}, 1), batch_of[3]};
    };
    return b;
  }

  std::shared_ptr<torch::nn::Module> create_model(const infer::InferContext& ctx,
                                                  const std::string& checkpoint) override {
    torch::manual_seed(1234);
    config_ = bert_config(ctx.config);
    BertForMaskedLM model(config_);
    caveat_ =
        infer::join_caveats(infer::load_case_weights(*model, ctx, checkpoint,
                                                     "give checkpoint: Hugging Face BertForMaskedLM's state_dict "
                                                     "(torch.save(dict(model.state_dict()), F)) or a LibTorch archive",
                                                     BertForMaskedLMImpl::tied_weights()),
                            synthetic_ ? "synthetic tokens: accuracy is meaningless" : "");
    model->use_fused_kernels(ctx.config.get_bool("fused_kernels", false));
    return model.ptr();
  }

  // With the kernels, q, k and v as one product: joined after the engine has cast the weights (a cast
  // makes copies, which would undo the join).
  void finish_model(torch::nn::Module& model, const infer::InferContext& ctx) override {
    if (ctx.config.get_bool("fused_kernels", false))
      dynamic_cast<BertForMaskedLMImpl&>(model).join_projections_for_inference();
  }

  torch::Tensor model_forward(torch::nn::Module& model, const torch::Tensor& input) override {
    return dynamic_cast<BertForMaskedLMImpl&>(model).predict_tokens(input.select(1, 0),
                                                                    input.select(1, 1).to(torch::kBool));
  }

  // The outputs: predicted ids (batch, tokens), or logits (batch, tokens, vocab) from an engine that
  // runs Hugging Face's model as it is.
  void evaluator(const torch::Tensor& outputs, const torch::Tensor& labels, infer::Evaluation& e) override {
    e.metric = "masked_lm_accuracy";
    const auto predicted = outputs.dim() == 3 ? outputs.argmax(-1) : outputs.round().to(torch::kLong);
    const auto masked = labels.ge(0);
    e.correct += (predicted.eq(labels) & masked).sum().item<double>();
    e.count += masked.sum().item<double>();
  }

  // The share of positions whose predicted token is the same.
  double output_agreement(const torch::Tensor& outputs, const torch::Tensor& reference) const override {
    const auto ids = [](const torch::Tensor& t) { return t.dim() == 3 ? t.argmax(-1) : t.round().to(torch::kLong); };
    return ids(outputs).eq(ids(reference)).to(torch::kFloat).mean().item<double>();
  }

  double flops_per_sample() const override {
    return config_.forward_flops_per_token(length_) * static_cast<double>(length_);
  }
  std::string caveat() const override { return caveat_; }

 private:
  BertConfig config_ = BertConfig::large();
  std::int64_t length_ = 512;
  std::string caveat_;
  bool synthetic_ = false;
};

XPUPERF_REGISTER_INFERENCE_CASE("bertLarge", "libtorch", BertLargeInference);

}  // namespace
}  // namespace xpuperf::cases
