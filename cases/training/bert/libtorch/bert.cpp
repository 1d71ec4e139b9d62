// BERT masked-LM pre-training on a token dataset made with BERT's WordPiece: the model is
// models/bert.h (Hugging Face's BertForMaskedLM layout), the data train/token_datasets.h ([CLS]
// span [SEP], 15 % of the tokens masked 80/10/10). The metrics: masked-LM accuracy (the share of
// masked tokens predicted right, FlagPerf's bert target metric) and the masked-LM loss.

#include "xpuperf/models/bert.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "xpuperf/datasets/token_datasets.h"
#include "xpuperf/models/documents.h"
#include "xpuperf/train/training_case.h"

namespace xpuperf::cases {
namespace {

models::BertConfig bert_config(const Config& cfg) {
  models::BertConfig c = models::bert_config_from(cfg, models::BertConfig::base());
  c.dropout = c.attention_dropout = cfg.get_number("dropout", c.dropout);
  return c;
}

class BertCase : public train::TrainingCase {
 public:
  train::Datasets datasets(const train::CaseContext& ctx) override {
    const auto c = bert_config(ctx.config);
    length_ = ctx.config.get_int("seq_length", 512);
    if (length_ < 8 || length_ > c.positions)
      throw ConfigError(ctx.config.at("seq_length").source.str() + ": seq_length must be in [8, " +
                        "max_position_embeddings = " + std::to_string(c.positions) + "], got " +
                        std::to_string(length_));
    const auto corpus = datasets::open_token_corpus(ctx, "wordpiece", c.vocab);
    const text::BertSamples::Special special{corpus.cls, corpus.sep, corpus.mask, corpus.pad,
                                             static_cast<std::int32_t>(c.vocab)};
    const auto seed = static_cast<std::uint64_t>(ctx.config.get_int("seed", 1234));
    packing_ = ctx.config.get_bool("sequence_packing", false);
    train_ = std::make_shared<datasets::BertTokenDataset>(corpus.train, length_, special, seed, true, packing_);
    eval_ = std::make_shared<datasets::BertTokenDataset>(corpus.eval, length_, special, seed + 1, false, packing_);
    return {train_, eval_};
  }

  std::shared_ptr<torch::nn::Module> model(const train::CaseContext& ctx) override {
    model_ = models::BertForMaskedLM(bert_config(ctx.config));
    model_->use_fused_kernels(ctx.config.get_bool("fused_kernels", false));
    model_->to(ctx.device);
    return model_.ptr();
  }

  torch::Tensor forward_step(const train::Batch& batch) override { return loss_and_accuracy(batch).first; }

  void evaluate(const train::Batch& batch, train::MetricSums& sums) override {
    const auto [loss, accuracy] = loss_and_accuracy(batch);
    const auto masked = batch[3].ge(0).sum().item<double>();
    sums.add("accuracy", accuracy.item<double>() * masked, masked);
    sums.add("loss", loss.item<double>() * masked, masked);
  }

  // Counted on the padded length (the attention and linears run over it) with 15 % of it through
  // the prediction head.
  double train_flops_per_sample() const override {
    return model_ ? model_->training_flops_per_token(length_, 0.15) * static_cast<double>(length_) : 0.0;
  }
  std::int64_t tokens_per_sample() const override { return length_; }
  std::map<std::string, std::string> tied_weights() const override {
    return models::BertForMaskedLMImpl::tied_weights();
  }
  // The share of the training rows' positions that are real tokens (an epoch's: each row is read
  // once an epoch), so that tokens_per_second × it is the real tokens' rate.
  void step_counters(std::map<std::string, double>& counters) override {
    if (train_) counters["real_token_share"] = train_->real_token_share();
  }

 private:
  // The loss and accuracy of a batch: with sequence packing, each token attends within its own
  // segment (batch[2]) and its position counts from its segment's start (models/documents.h).
  std::pair<torch::Tensor, torch::Tensor> loss_and_accuracy(const train::Batch& batch) {
    if (!packing_) return model_->loss_and_accuracy(batch[0], batch[1], batch[2], batch[3], max_predictions(batch[0]));
    const auto d = models::document_attention(batch[2], /*causal=*/false);
    return model_->loss_and_accuracy(batch[0], batch[1], d.mask.squeeze(1), batch[3], max_predictions(batch[0]),
                                     d.positions);
  }

  // The most positions a batch can have masked: BertSamples masks round(15 % of a sample's
  // length − 2) at most, at least one; a packed row, what its samples have together (the most any
  // row of either dataset has).
  std::int64_t max_predictions(const torch::Tensor& ids) const {
    if (packing_) return ids.size(0) * std::max(train_->max_masked_per_sample(), eval_->max_masked_per_sample());
    return ids.size(0) * (std::llround(0.15 * static_cast<double>(length_ - 2)) + 1);
  }

  models::BertForMaskedLM model_{nullptr};
  std::shared_ptr<datasets::BertTokenDataset> train_, eval_;
  bool packing_ = false;
  std::int64_t length_ = 512;
};

XPUPERF_REGISTER_TRAINING_CASE("bert", "libtorch", BertCase);

}  // namespace
}  // namespace xpuperf::cases
