#include "xpuperf/train/precision.h"

#include <stdexcept>

#include "xpuperf/torchrt/compat.h"

namespace xpuperf::train {

Precision parse_precision(const std::string& text) {
  if (text == "fp32") return Precision::FP32;
  if (text == "tf32") return Precision::TF32;
  if (text == "bf16") return Precision::BF16;
  if (text == "fp16") return Precision::FP16;
  throw std::invalid_argument("'precision' must be fp32, tf32, bf16 or fp16, got '" + text + "'");
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::FP32:
      return "fp32";
    case Precision::TF32:
      return "tf32";
    case Precision::BF16:
      return "bf16";
    case Precision::FP16:
      return "fp16";
  }
  return "fp32";
}

void apply_tf32_setting(Precision p) {
  auto& context = at::globalContext();
  if (p == Precision::FP32 || p == Precision::TF32) {
    const bool on = p == Precision::TF32;
    context.setAllowTF32CuBLAS(on);
    context.setAllowTF32CuDNN(on);
  }
}

AutocastScope::AutocastScope(torch::Device device, Precision precision) : device_(device.type()) {
  if (!autocasts(precision)) return;
  if (device_ == c10::DeviceType::CPU && precision == Precision::FP16 && !compat::cpu_autocast_supports_fp16())
    throw std::invalid_argument("fp16 autocast needs a CUDA device with this LibTorch; use bf16 on the CPU");
  active_ = true;
  previous_enabled_ = compat::autocast_enabled(device_);
  previous_dtype_ = compat::autocast_dtype(device_);
  compat::set_autocast_enabled(device_, true);
  compat::set_autocast_dtype(device_, precision == Precision::BF16 ? at::kBFloat16 : at::kHalf);
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

torch::Tensor LossScaler::scale(const torch::Tensor& loss) {
  if (!device_scale_.defined() || device_scale_.device() != loss.device())
    device_scale_ = torch::full({}, scale_, torch::TensorOptions().dtype(torch::kFloat).device(loss.device()));
  return loss * device_scale_;
}

std::vector<torch::Tensor> LossScaler::gradients_of(const std::vector<torch::Tensor>& params) const {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  return grads;
}

bool LossScaler::unscale_and_check(const std::vector<torch::Tensor>& params,
                                   const std::function<void(torch::Tensor&)>& reduce_max) {
  const std::vector<torch::Tensor> grads = gradients_of(params);
  if (grads.empty() && !reduce_max) return false;
  const auto device = grads.empty() ? torch::Device(torch::kCPU) : grads[0].device();
  auto found_inf = torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat).device(device));
  const auto inv_scale = torch::full({1}, 1.0 / scale_, torch::TensorOptions().dtype(torch::kFloat).device(device));
  if (grads.empty()) {
    // nothing of this rank's to check
  } else if (compat::has_fused_unscale(device.type())) {
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
  } else {
    for (auto& g : grads) {
      found_inf.logical_or_(g.isfinite().all().logical_not());
      g.mul_(inv_scale.to(g.dtype()));
    }
  }
  if (reduce_max) reduce_max(found_inf);
  return found_inf.item<float>() != 0.0f;
}

torch::Tensor LossScaler::unscale_and_update_on_device(const std::vector<torch::Tensor>& params,
                                                       const std::function<void(torch::Tensor&)>& reduce_max) {
  const std::vector<torch::Tensor> grads = gradients_of(params);
  TORCH_CHECK(device_scale_.defined() && !grads.empty() && compat::has_fused_unscale(device_scale_.device().type()),
              "the loss scaler's device form needs a scaled loss and gradients on a device with the fused unscale");
  const auto floats = device_scale_.options();
  if (!growth_tracker_.defined()) {
    growth_tracker_ = torch::zeros({1}, floats.dtype(torch::kInt));
    device_skipped_ = torch::zeros({1}, floats);
  }
  auto found_inf = torch::zeros({1}, floats);
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, device_scale_.reciprocal().reshape({1}));
  if (reduce_max) reduce_max(found_inf);
  device_skipped_.add_(found_inf);
  // The scale the next step multiplies its loss by (a graph that captured scale() reads it too).
  at::_amp_update_scale_(device_scale_, growth_tracker_, found_inf, options_.growth_factor, options_.backoff_factor,
                         options_.growth_interval);
  return found_inf;
}

double LossScaler::current_scale() const {
  return growth_tracker_.defined() ? device_scale_.item<double>() : scale_;
}

std::int64_t LossScaler::skipped_steps() const {
  return growth_tracker_.defined() ? static_cast<std::int64_t>(device_skipped_.item<float>()) : skipped_;
}

bool LossScaler::update(bool found_inf) {
  const double before = scale_;
  if (found_inf) {
    scale_ *= options_.backoff_factor;
    good_steps_ = 0;
    ++skipped_;
  } else if (++good_steps_ >= options_.growth_interval) {
    scale_ *= options_.growth_factor;
    good_steps_ = 0;
  }
  if (scale_ != before && device_scale_.defined()) device_scale_.fill_(scale_);
  return !found_inf;
}

}  // namespace xpuperf::train
