#pragma once
// Llama with a sequence-classification head, laid out and named as Hugging Face's
// LlamaForSequenceClassification (model.*, score): the last real token's hidden state (the
// decoder is causal, so it has read the whole text) through one bias-free linear layer to a logit a
// label. Its decoder's names are LlamaForCausalLM's, so a checkpoint the llama case wrote (or a
// Hugging Face Llama state_dict) starts it; `score` is then new (torchrt::load_pretrained says so).

#include <torch/torch.h>

#include <cstdint>
#include <utility>

#include "xpuperf/models/llama.h"

namespace xpuperf::models {

struct LlamaForSequenceClassificationImpl : torch::nn::Module {
  LlamaForSequenceClassificationImpl(const LlamaConfig& c, std::int64_t labels);
  // Logits (batch, labels) at each row's last kept position; keep: true at real tokens, a prefix
  // of each row (padding on the right).
  torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& keep);
  // The mean cross entropy against `labels` (batch) and how many were predicted right.
  std::pair<torch::Tensor, torch::Tensor> loss_and_correct(const torch::Tensor& ids, const torch::Tensor& keep,
                                                           const torch::Tensor& labels);
  // Training FLOPs a sequence of `tokens`: 3 × the decoder's forward without the vocabulary's
  // logits, and the score layer once.
  double training_flops_per_sequence(std::int64_t tokens) const;

  LlamaConfig config;
  std::int64_t label_count;
  LlamaModel model{nullptr};
  torch::nn::Linear score{nullptr};
};
TORCH_MODULE(LlamaForSequenceClassification);

}  // namespace xpuperf::models
