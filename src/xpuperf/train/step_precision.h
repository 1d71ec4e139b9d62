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

// Whether the optimizer steps, as the loss scaler decides it: `run` false skips it on the host; a
// defined `found_inf` (fp16 with an optimizer that skips on the device) is the flag the optimizer
// reads instead, so no step waits for the device to learn whether its gradients were finite.
struct StepGate {
  bool run = true;
  torch::Tensor found_inf;
};

class StepPrecision {
 public:
  // optimizer_skips_on_device: GradientSync::skips_on_device (fp16 then decides on the device).
  StepPrecision(torch::Device device, Precision precision, bool optimizer_skips_on_device = false);
  Precision precision() const { return precision_; }
  // Autocast while the returned scope lives (nothing for fp32 and tf32).
  AutocastScope autocast() const { return AutocastScope(device_, precision_); }
  // The loss backward starts from.
  torch::Tensor scale(const torch::Tensor& loss) { return scaler_ ? scaler_->scale(loss) : loss; }
  // After the gradients are averaged: unscales `stepped`'s gradients and adjusts the scale, and says
  // whether (or on what condition) the optimizer steps. `agree` makes the inf/nan flag the same on
  // every rank where each checked only its part (GradientSync::overflow_agreement).
  StepGate unscale_and_update(const std::vector<torch::Tensor>& stepped,
                              const std::function<void(torch::Tensor&)>& agree);
  // What STEP_END and FINISHED say of it.
  void describe_step(nlohmann::json& step_end) const;
  void describe(nlohmann::json& finished) const;

 private:
  torch::Device device_;
  Precision precision_;
  std::unique_ptr<LossScaler> scaler_;  // fp16 only
  bool on_device_;
};

}  // namespace xpuperf::train
