#pragma once
// A causal language-modelling case on the GPT model (models/gpt.h, Hugging Face's GPT2LMHeadModel
// layout): GPT-2 on GPT-2's BPE and CPM-1 on a SentencePiece vocabulary are this with their own
// default shape, tokeniser and sequence length. init_checkpoint also reads a state_dict in CPM-1's
// and Megatron-LM's first GPT-2 names (models::convert_megatron_gpt_names).

#include <map>
#include <string>
#include <utility>

#include "xpuperf/models/gpt.h"
#include "xpuperf/train/families/causal_lm_case.h"

namespace xpuperf::train {

class GptLmCase : public CausalLmCase {
 public:
  // `tokenizer`: what the token dataset must be made with (its .json says); `shape`: the sizes the
  // config's keys start from; `default_length`: seq_length when the config has none.
  GptLmCase(std::string tokenizer, models::GptConfig shape, std::int64_t default_length)
      : tokenizer_(std::move(tokenizer)), shape_(shape), default_length_(default_length) {}

  Datasets datasets(const CaseContext& ctx) override {
    const auto c = models::gpt_config_from(ctx.config, shape_);
    return token_datasets(ctx, tokenizer_, c.vocab, default_length_, c.positions, "n_positions");
  }

  std::shared_ptr<torch::nn::Module> model(const CaseContext& ctx) override {
    model_ = models::GptLMHeadModel(models::gpt_config_from(ctx.config, shape_));
    model_->fused_kernels = ctx.config.get_bool("fused_kernels", false);
    model_->to(ctx.device);
    return model_.ptr();
  }

  std::map<std::string, std::string> tied_weights() const override {
    return models::GptLMHeadModelImpl::tied_weights();
  }

  std::string convert_checkpoint(std::map<std::string, torch::Tensor>& tensors) const override {
    return models::convert_megatron_gpt_names(tensors) ? "CPM-1's (Megatron-LM GPT-2) names" : "";
  }

 protected:
  torch::Tensor lm_loss(const torch::Tensor& ids, const torch::Tensor& documents) override {
    return model_->loss(ids, documents);
  }
  double training_flops_per_token(std::int64_t tokens) const override {
    return model_ ? model_->training_flops_per_token(tokens) : 0.0;
  }

 private:
  std::string tokenizer_;
  models::GptConfig shape_;
  std::int64_t default_length_;
  models::GptLMHeadModel model_{nullptr};
};

}  // namespace xpuperf::train
