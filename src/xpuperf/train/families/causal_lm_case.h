#pragma once
// What the causal language-model cases (gpt2, llama) share: samples of seq_length + 1 consecutive
// tokens of a token dataset (train/token_datasets.h; with `sequence_packing: true` each token
// attends within its own document only), the loss of each token given the ones before as the
// training step, and the validation loss (mean cross entropy a token, in nats) with its
// perplexity as the metrics. A case adds its model: the loss and the FLOPs a token.

#include <map>
#include <string>

#include "xpuperf/train/training_case.h"

namespace xpuperf::train {

class CausalLmCase : public TrainingCase {
 public:
  torch::Tensor forward_step(const Batch& batch) override { return lm_loss(batch[0], documents_of(batch)); }
  void evaluate(const Batch& batch, MetricSums& sums) override;
  void derive_metrics(std::map<std::string, double>& metrics) const override;
  double train_flops_per_sample() const override;
  std::int64_t tokens_per_sample() const override { return length_; }
  std::string peft_task_type() const override { return "CAUSAL_LM"; }

 protected:
  // The datasets of seq_length-token samples (default `default_length`, at most `positions`, the
  // model's longest sequence, named by `positions_key`) of a dataset made by `tokenizer`.
  Datasets token_datasets(const CaseContext& ctx, const std::string& tokenizer, std::int64_t vocab,
                          std::int64_t default_length, std::int64_t positions, const std::string& positions_key);
  // The mean loss of ids (batch, tokens + 1): each token after the first given the ones before (of
  // its own document only where `documents`, the same shape, is defined: sequence packing).
  virtual torch::Tensor lm_loss(const torch::Tensor& ids, const torch::Tensor& documents) = 0;
  // Training FLOPs a token of a sequence of `tokens`; 0 before the model exists.
  virtual double training_flops_per_token(std::int64_t tokens) const = 0;

  std::int64_t length_ = 0;

 private:
  static torch::Tensor documents_of(const Batch& batch) { return batch.size() > 1 ? batch[1] : torch::Tensor(); }
};

}  // namespace xpuperf::train
