// GPT-2 pre-training (causal language modelling) on a token dataset: the model is
// models/gpt.h (Hugging Face's GPT2LMHeadModel layout), the data train/token_datasets.h; the
// metrics are the validation loss (mean cross entropy a token, in nats) and its perplexity.

#include <cmath>

#include "xpuperf/models/gpt.h"
#include "xpuperf/train/token_datasets.h"

namespace xpuperf::cases {
namespace {

models::GptConfig gpt_config(const Config& cfg) {
  models::GptConfig c;
  c.vocab = cfg.get_int("vocab_size", c.vocab);
  c.positions = cfg.get_int("n_positions", c.positions);
  c.layers = cfg.get_int("n_layer", c.layers);
  c.hidden = cfg.get_int("n_embd", c.hidden);
  c.heads = cfg.get_int("n_head", c.heads);
  c.dropout = cfg.get_number("dropout", c.dropout);
  if (c.vocab < 2 || c.positions < 1 || c.layers < 1 || c.heads < 1 || c.hidden < c.heads || c.hidden % c.heads != 0)
    throw ConfigError("the GPT's sizes do not fit: vocab_size " + std::to_string(c.vocab) + ", n_positions " +
                      std::to_string(c.positions) + ", n_layer " + std::to_string(c.layers) + ", n_embd " +
                      std::to_string(c.hidden) + " (a multiple of n_head " + std::to_string(c.heads) + ")");
  return c;
}

class Gpt2Case : public train::TrainingCase {
 public:
  train::Datasets datasets(const train::CaseContext& ctx) override {
    const auto c = gpt_config(ctx.config);
    length_ = ctx.config.get_int("seq_length", 1024);
    if (length_ < 1 || length_ > c.positions)
      throw ConfigError(ctx.config.at("seq_length").source.str() + ": seq_length must be in [1, n_positions = " +
                        std::to_string(c.positions) + "], got " + std::to_string(length_));
    auto corpus = train::open_token_corpus(ctx, "gpt2", c.vocab);
    return {std::make_shared<train::GptTokenDataset>(corpus.train, length_),
            std::make_shared<train::GptTokenDataset>(corpus.eval, length_)};
  }

  std::shared_ptr<torch::nn::Module> model(const train::CaseContext& ctx) override {
    model_ = models::GptLMHeadModel(gpt_config(ctx.config));
    model_->fused_kernels = ctx.config.get_bool("fused_kernels", false);
    model_->to(ctx.device);
    return model_.ptr();
  }

  torch::Tensor forward_step(const train::Batch& batch) override { return model_->loss(batch[0]); }

  void evaluate(const train::Batch& batch, train::MetricSums& sums) override {
    const auto tokens = static_cast<double>(batch[0].size(0) * (batch[0].size(1) - 1));
    sums.add("loss", model_->loss(batch[0]).item<double>() * tokens, tokens);
  }

  void derive_metrics(std::map<std::string, double>& metrics) const override {
    if (metrics.count("loss")) metrics["perplexity"] = std::exp(metrics["loss"]);
  }

  double train_flops_per_sample() const override {
    return model_ ? model_->training_flops_per_token(length_) * static_cast<double>(length_) : 0.0;
  }
  std::int64_t tokens_per_sample() const override { return length_; }
  std::map<std::string, std::string> tied_weights() const override {
    return models::GptLMHeadModelImpl::tied_weights();
  }

 private:
  models::GptLMHeadModel model_{nullptr};
  std::int64_t length_ = 1024;
};

XPUPERF_REGISTER_TRAINING_CASE("gpt2", "libtorch", Gpt2Case);

}  // namespace
}  // namespace xpuperf::cases
