#include "xpuperf/train/precision.h"

#include <stdexcept>

#include "xpuperf/train/compat.h"

namespace xpuperf::train {

MixedPrecision parse_mixed_precision(const std::string& text) {
  if (text == "off" || text == "false" || text == "fp32") return MixedPrecision::Off;
  if (text == "bf16") return MixedPrecision::BF16;
  if (text == "fp16") return MixedPrecision::FP16;
  throw std::invalid_argument("'mixed_precision' must be off, bf16 or fp16, got '" + text + "'");
}

const char* mixed_precision_name(MixedPrecision mp) {
  switch (mp) {
    case MixedPrecision::Off:
      return "off";
    case MixedPrecision::BF16:
      return "bf16";
    case MixedPrecision::FP16:
      return "fp16";
  }
  return "off";
}

AutocastScope::AutocastScope(torch::Device device, MixedPrecision mp) : device_(device.type()) {
  if (mp == MixedPrecision::Off) return;
  if (device_ == c10::DeviceType::CPU && mp == MixedPrecision::FP16 && !compat::cpu_autocast_supports_fp16())
    throw std::invalid_argument("fp16 autocast needs a CUDA device with this LibTorch; use bf16 on the CPU");
  active_ = true;
  previous_enabled_ = compat::autocast_enabled(device_);
  previous_dtype_ = compat::autocast_dtype(device_);
  compat::set_autocast_enabled(device_, true);
  compat::set_autocast_dtype(device_, mp == MixedPrecision::BF16 ? at::kBFloat16 : at::kHalf);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  // Without clearing, the cached casts of the weights would pile up step after step.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  compat::set_autocast_enabled(device_, previous_enabled_);
  compat::set_autocast_dtype(device_, previous_dtype_);
}

LossScaler::LossScaler(Options options) : options_(options), scale_(options.init_scale) {}

bool LossScaler::unscale_and_check(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return false;
  const auto device = grads[0].device();
  auto found_inf = torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat).device(device));
  const auto inv_scale = torch::full({1}, 1.0 / scale_, torch::TensorOptions().dtype(torch::kFloat).device(device));
  if (compat::has_fused_unscale(device.type())) {
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
  } else {
    for (auto& g : grads) {
      found_inf.logical_or_(g.isfinite().all().logical_not());
      g.mul_(inv_scale.to(g.dtype()));
    }
  }
  return found_inf.item<float>() != 0.0f;
}

bool LossScaler::update(bool found_inf) {
  if (found_inf) {
    scale_ *= options_.backoff_factor;
    good_steps_ = 0;
    ++skipped_;
    return false;
  }
  if (++good_steps_ >= options_.growth_interval) {
    scale_ *= options_.growth_factor;
    good_steps_ = 0;
  }
  return true;
}

}  // namespace xpuperf::train
