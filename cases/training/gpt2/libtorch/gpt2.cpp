// GPT-2 pre-training (causal language modelling) on a token dataset: the model is
// models/gpt.h (Hugging Face's GPT2LMHeadModel layout); the data, the step and the metrics
// (validation loss and perplexity) are train/causal_lm_case.h's.

#include "xpuperf/models/gpt.h"
#include "xpuperf/train/causal_lm_case.h"

namespace xpuperf::cases {
namespace {

class Gpt2Case : public train::CausalLmCase {
 public:
  train::Datasets datasets(const train::CaseContext& ctx) override {
    const auto c = models::gpt_config_from(ctx.config, models::GptConfig::gpt2_small());
    return token_datasets(ctx, "gpt2", c.vocab, 1024, c.positions, "n_positions");
  }

  std::shared_ptr<torch::nn::Module> model(const train::CaseContext& ctx) override {
    model_ = models::GptLMHeadModel(models::gpt_config_from(ctx.config, models::GptConfig::gpt2_small()));
    model_->fused_kernels = ctx.config.get_bool("fused_kernels", false);
    model_->to(ctx.device);
    return model_.ptr();
  }

  std::map<std::string, std::string> tied_weights() const override {
    return models::GptLMHeadModelImpl::tied_weights();
  }

 protected:
  torch::Tensor lm_loss(const torch::Tensor& ids) override { return model_->loss(ids); }
  double training_flops_per_token(std::int64_t tokens) const override {
    return model_ ? model_->training_flops_per_token(tokens) : 0.0;
  }

 private:
  models::GptLMHeadModel model_{nullptr};
};

XPUPERF_REGISTER_TRAINING_CASE("gpt2", "libtorch", Gpt2Case);

}  // namespace
}  // namespace xpuperf::cases
