#include "xpuperf/train/step_precision.h"

namespace xpuperf::train {

StepPrecision::StepPrecision(torch::Device device, Precision precision, bool optimizer_skips_on_device)
    : device_(device), precision_(precision), on_device_(optimizer_skips_on_device && device.is_cuda()) {
  if (precision == Precision::FP16) scaler_ = std::make_unique<LossScaler>();
}

StepGate StepPrecision::unscale_and_update(const std::vector<torch::Tensor>& stepped,
                                           const std::function<void(torch::Tensor&)>& agree) {
  if (!scaler_) return {};
  if (on_device_) return {true, scaler_->unscale_and_update_on_device(stepped, agree)};
  return {scaler_->update(scaler_->unscale_and_check(stepped, agree)), torch::Tensor()};
}

void StepPrecision::describe_step(nlohmann::json& step_end) const {
  if (scaler_) step_end["loss_scale"] = scaler_->current_scale();
}

void StepPrecision::describe(nlohmann::json& finished) const {
  if (scaler_) finished["skipped_steps"] = scaler_->skipped_steps();
}

}  // namespace xpuperf::train
