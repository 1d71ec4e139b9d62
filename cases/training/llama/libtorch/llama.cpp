// Llama pre-training (causal language modelling) on a token dataset made with Llama 3's
// tokeniser: the model is models/llama.h (Hugging Face's LlamaForCausalLM layout, shared with the
// llm inference case); the data, the step and the metrics (validation loss and perplexity) are
// train/causal_lm_case.h's.

#include "xpuperf/models/llama.h"

#include "xpuperf/train/causal_lm_case.h"

namespace xpuperf::cases {
namespace {

// The default shape is _base.yaml's (Llama-3.2-1B); the config's keys set every size.
models::LlamaConfig case_llama_config(const Config& cfg) {
  return models::llama_config_from(cfg, models::LlamaConfig::llama3_2_1b());
}

class LlamaCase : public train::CausalLmCase {
 public:
  train::Datasets datasets(const train::CaseContext& ctx) override {
    const auto c = case_llama_config(ctx.config);
    return token_datasets(ctx, "llama3", c.vocab, 2048, c.max_positions, "max_position_embeddings");
  }

  std::shared_ptr<torch::nn::Module> model(const train::CaseContext& ctx) override {
    const auto c = case_llama_config(ctx.config);
    if (c.tie_word_embeddings && ctx.config.get_int("tensor_parallel", 1) > 1)
      throw ConfigError(
          "tensor_parallel " + std::to_string(ctx.config.get_int("tensor_parallel", 1)) +
          " with tie_word_embeddings: true: tensor parallelism splits the embedding's vocabulary rows, which a tied "
          "output layer would share; use tensor_parallel: 1 or a shape with its own output layer "
          "(tie_word_embeddings: false, as Llama-3-8B's)");
    if (c.moe.experts > 0 && ctx.config.get_int("tensor_parallel", 1) > 1)
      throw ConfigError("tensor_parallel " + std::to_string(ctx.config.get_int("tensor_parallel", 1)) +
                        " with num_local_experts " + std::to_string(c.moe.experts) +
                        ": splitting the experts' layers is not built (expert parallelism is their way); use "
                        "tensor_parallel: 1");
    model_ = models::LlamaForCausalLM(c);
    model_->fused_kernels = ctx.config.get_bool("fused_kernels", false);
    model_->to(ctx.device);
    return model_.ptr();
  }

  std::map<std::string, std::string> tied_weights() const override {
    return model_ ? model_->tied_weights() : std::map<std::string, std::string>{};
  }

 protected:
  torch::Tensor lm_loss(const torch::Tensor& ids) override {
    auto loss = model_->loss(ids);
    // Counted here, after the forward, and not in the layers: a checkpointed layer runs forward again
    // in backward, and evaluation routes tokens too.
    if (model_->config.moe.experts > 0 && model_->is_training()) {
      const auto [dropped, routed] = model_->dropped_tokens();
      dropped_ += dropped;
      routed_ += routed;
    }
    return loss;
  }

  void step_counters(std::map<std::string, double>& counters) override {
    if (model_->config.moe.experts == 0) return;
    counters["moe_routed_pairs"] = static_cast<double>(routed_);
    counters["moe_dropped_pairs"] = static_cast<double>(dropped_);
    counters["moe_dropped_share"] = routed_ > 0 ? static_cast<double>(dropped_) / static_cast<double>(routed_) : 0.0;
    dropped_ = routed_ = 0;
  }
  double training_flops_per_token(std::int64_t tokens) const override {
    return model_ ? model_->config.training_flops_per_token(tokens) : 0.0;
  }

 private:
  models::LlamaForCausalLM model_{nullptr};
  std::int64_t dropped_ = 0, routed_ = 0;  // MoE (token, expert) pairs since the last STEP_END, this rank's
};

XPUPERF_REGISTER_TRAINING_CASE("llama", "libtorch", LlamaCase);

}  // namespace
}  // namespace xpuperf::cases
