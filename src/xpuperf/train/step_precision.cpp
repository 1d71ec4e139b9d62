#include "xpuperf/train/step_precision.h"

#include <set>

#include "xpuperf/core/training_switches.h"

namespace xpuperf::train {

namespace {

// `precision`: one of the four this class runs.
void check_precision(const SwitchCheckInput& in, Diagnostics& diags) {
  if (!in.cfg.has("precision")) return;
  static const std::set<std::string> kPrecisions = {"fp32", "tf32", "bf16", "fp16"};
  const std::string p = in.get_string("precision", "");
  if (!kPrecisions.count(p))
    diags.error(in.source("precision"), "'precision' must be fp32, tf32, bf16 or fp16, got '" + p + "'",
                "fp32 keeps TF32 off; bf16 and fp16 are autocast (fp16 with a dynamic loss scaler)");
}

const bool precision_check_registered = register_switch_check("precision", check_precision);

}  // namespace

StepPrecision::StepPrecision(torch::Device device, Precision precision) : device_(device), precision_(precision) {
  if (precision == Precision::FP16) scaler_ = std::make_unique<LossScaler>();
}

bool StepPrecision::unscale_and_update(const std::vector<torch::Tensor>& stepped,
                                       const std::function<void(torch::Tensor&)>& agree) {
  if (!scaler_) return true;
  return scaler_->update(scaler_->unscale_and_check(stepped, agree));
}

void StepPrecision::describe_step(nlohmann::json& step_end) const {
  if (scaler_) step_end["loss_scale"] = scaler_->current_scale();
}

void StepPrecision::describe(nlohmann::json& finished) const {
  if (scaler_) finished["skipped_steps"] = scaler_->skipped_steps();
}

}  // namespace xpuperf::train
