#pragma once
// The step's precision, one object: autocast around the forward pass (bf16, fp16) and, for fp16,
// the dynamic loss scaler that multiplies the loss, unscales the gradients and skips a step whose
// gradients are not finite.

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "xpuperf/train/precision.h"

namespace xpuperf::train {

class StepPrecision {
 public:
  StepPrecision(torch::Device device, Precision precision);
  Precision precision() const { return precision_; }
  // Autocast while the returned scope lives (nothing for fp32 and tf32).
  AutocastScope autocast() const { return AutocastScope(device_, precision_); }
  // The loss backward starts from.
  torch::Tensor scale(const torch::Tensor& loss) { return scaler_ ? scaler_->scale(loss) : loss; }
  // After the gradients are averaged: unscales `stepped`'s gradients and adjusts the scale. False
  // when the step must be skipped. `agree` makes the inf/nan flag the same on every rank where
  // each checked only its part (GradientSync::overflow_agreement).
  bool unscale_and_update(const std::vector<torch::Tensor>& stepped, const std::function<void(torch::Tensor&)>& agree);
  // What STEP_END and FINISHED say of it.
  void describe_step(nlohmann::json& step_end) const;
  void describe(nlohmann::json& finished) const;

 private:
  torch::Device device_;
  Precision precision_;
  std::unique_ptr<LossScaler> scaler_;  // fp16 only
};

}  // namespace xpuperf::train
