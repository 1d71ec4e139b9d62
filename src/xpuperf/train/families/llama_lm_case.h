#pragma once
// A causal language-modelling case on the Llama model (models/llama.h, Hugging Face's
// LlamaForCausalLM layout, with Mixtral's experts where the config asks): the llama case (Meta's
// Llama 3 shapes) and the mixtral case (Mixtral's) are this with their own default shape; the data,
// the step and the metrics are train/causal_lm_case.h's. The token dataset's tokeniser is the
// config's `tokenizer` (default llama3: Llama 3's 128,256 ids).

#include <map>
#include <string>

#include "xpuperf/models/llama.h"
#include "xpuperf/train/families/causal_lm_case.h"

namespace xpuperf::train {

class LlamaLmCase : public CausalLmCase {
 public:
  // `shape`: the sizes the config's keys start from (_base.yaml sets every one anyway).
  explicit LlamaLmCase(models::LlamaConfig shape) : shape_(shape) {}

  Datasets datasets(const CaseContext& ctx) override;
  std::shared_ptr<torch::nn::Module> model(const CaseContext& ctx) override;
  std::map<std::string, std::string> tied_weights() const override {
    return model_ ? model_->tied_weights() : std::map<std::string, std::string>{};
  }
  // Hugging Face's Mixtral checkpoints hold an expert a module: stacked into the block's tensors.
  std::string convert_checkpoint(std::map<std::string, torch::Tensor>& tensors) const override {
    return models::stack_hugging_face_experts(tensors) ? "Hugging Face's Mixtral experts (one module an expert)" : "";
  }

 protected:
  torch::Tensor lm_loss(const torch::Tensor& ids, const torch::Tensor& documents) override;
  void step_counters(std::map<std::string, double>& counters) override;
  void micro_batch_replayed() override;
  double training_flops_per_token(std::int64_t tokens) const override {
    return model_ ? model_->config.training_flops_per_token(tokens) : 0.0;
  }

 private:
  models::LlamaConfig config_from(const Config& cfg) const { return models::llama_config_from(cfg, shape_); }

  models::LlamaConfig shape_;
  models::LlamaForCausalLM model_{nullptr};
  std::int64_t dropped_ = 0, routed_ = 0;             // MoE (token, expert) pairs since the last STEP_END, this rank's
  std::pair<std::int64_t, std::int64_t> last_{0, 0};  // the last training forward's (dropped, routed)
};

}  // namespace xpuperf::train
