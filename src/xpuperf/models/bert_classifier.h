#pragma once
// BERT with a sequence-classification head, laid out and named as Hugging Face's
// BertForSequenceClassification (bert.{embeddings, encoder, pooler.dense}, classifier): the
// pooled [CLS] vector through dropout and one linear layer to a logit a label. Its encoder's names
// are BertForMaskedLM's, so a checkpoint the bert case wrote (or a Hugging Face BERT state_dict)
// starts it; the pooler and the classifier are then new (torchrt::load_pretrained says which).

#include <torch/torch.h>

#include <cstdint>
#include <utility>

#include "xpuperf/models/bert.h"

namespace xpuperf::models {

struct BertForSequenceClassificationImpl : torch::nn::Module {
  BertForSequenceClassificationImpl(const BertConfig& c, std::int64_t labels);
  // Logits (batch, labels); keep: true at real tokens.
  torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& types, const torch::Tensor& keep);
  // The mean cross entropy against `labels` (batch) and how many were predicted right.
  std::pair<torch::Tensor, torch::Tensor> loss_and_correct(const torch::Tensor& ids, const torch::Tensor& types,
                                                           const torch::Tensor& keep, const torch::Tensor& labels);
  // Training FLOPs a sequence of `tokens`: 6 × the encoder's linears a token + the attention
  // products (12 × layers × hidden × tokens a token), and the pooler and classifier once.
  double training_flops_per_sequence(std::int64_t tokens) const;

  BertConfig config;
  std::int64_t label_count;
  BertModel bert{nullptr};
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Linear classifier{nullptr};
};
TORCH_MODULE(BertForSequenceClassification);

}  // namespace xpuperf::models
