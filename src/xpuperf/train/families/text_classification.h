#pragma once
// What the fine-tuning cases (bert_finetune, llama_finetune, glm_record) share; their data:
// datasets/text_classification_data.h.

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <utility>

#include "xpuperf/datasets/text_classification_data.h"
#include "xpuperf/train/training_case.h"

namespace xpuperf::train {

// What the fine-tuning cases (bert_finetune, llama_finetune) share: a pretrained start, the loss
// as the step, and accuracy and loss as the metrics. A case adds its data and model.
class TextClassificationCase : public TrainingCase {
 public:
  torch::Tensor forward_step(const Batch& batch) override { return loss_and_correct(batch).first; }
  void evaluate(const Batch& batch, MetricSums& sums) override;
  double train_flops_per_sample() const override { return training_flops_per_sequence(length_); }
  std::int64_t tokens_per_sample() const override { return length_; }
  bool starts_from_pretrained() const override { return true; }

 protected:
  // The mean cross entropy of a batch (ids, token types, keep, labels) and how many it got right.
  virtual std::pair<torch::Tensor, torch::Tensor> loss_and_correct(const Batch& batch) = 0;
  // 0 before the model exists.
  virtual double training_flops_per_sequence(std::int64_t tokens) const = 0;
  // The config's train_data and eval_data as `datasets::classification_data` reads them, seq_length tokens a
  // text (default `default_length`; at least the framing and a token, at most `positions`, the
  // model's longest sequence, named by `positions_key`); sets length_ and labels_.
  Datasets labelled_datasets(const CaseContext& ctx, const datasets::TextEncoder& encode,
                             const datasets::TextFraming& framing, std::int64_t default_length, std::int64_t positions,
                             const std::string& positions_key);

  std::int64_t length_ = 0, labels_ = 2;
};

}  // namespace xpuperf::train
