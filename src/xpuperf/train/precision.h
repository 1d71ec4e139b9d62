#pragma once
// Numeric precision of training (`precision`): fp32 with TF32 off, tf32, and the mixed precisions
// bf16 and fp16 as autocast scopes, fp16 with a dynamic loss scaler (there is no GradScaler in the
// C++ API).

#include <torch/torch.h>

#include <string>
#include <vector>

namespace xpuperf::train {

#include <functional>

enum class Precision { FP32, TF32, BF16, FP16 };

// "fp32", "tf32", "bf16", "fp16"; throws std::invalid_argument for anything else.
Precision parse_precision(const std::string& text);
const char* precision_name(Precision p);
// Whether the precision runs the forward pass under autocast (bf16, fp16).
inline bool autocasts(Precision p) {
  return p == Precision::BF16 || p == Precision::FP16;
}
// Sets the process's TF32 switches for cuBLAS matmuls and cuDNN convolutions: on for tf32, off for
// fp32 (so that fp32 means fp32 on Ampere and later), LibTorch's defaults for bf16 and fp16.
void apply_tf32_setting(Precision p);

// Autocast on `device` while alive, like Python's `with torch.autocast(...)`; restores the
// previous state and clears the cast cache when the outermost scope ends.
class AutocastScope {
 public:
  AutocastScope(torch::Device device, Precision precision);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_;
  bool previous_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kFloat;
};

// Dynamic loss scaling as torch.cuda.amp.GradScaler does it: multiply the loss by `scale`,
// unscale the gradients before the step, skip steps whose gradients are not finite and halve
// the scale; double it after `growth_interval` good steps in a row. The loss is multiplied by a
// tensor on its device that a new scale overwrites in place, so that a CUDA graph which captured
// the multiplication reads each step's scale (cuda_graphs with fp16).
class LossScaler {
 public:
  struct Options {
    double init_scale = 65536.0;
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    int growth_interval = 2000;
  };
  LossScaler() : LossScaler(Options{}) {}
  explicit LossScaler(Options options);

  torch::Tensor scale(const torch::Tensor& loss);
  // Divides every gradient by the scale in place; true when any was inf or nan. When each rank
  // holds only a share of the gradients (ZeRO), `reduce_max` takes the flag's maximum over ranks.
  bool unscale_and_check(const std::vector<torch::Tensor>& params,
                         const std::function<void(torch::Tensor&)>& reduce_max = {});
  // Adjusts the scale after a step; returns whether the optimizer step should run.
  bool update(bool found_inf);
  // Both on the device, without waiting for it, for an optimizer that skips a step itself
  // (optim::StepOptimizer::skips_on_device): unscales, adjusts the scale as update does, counts a skipped
  // step, and returns the inf/nan flag (one float) for the optimizer. A run uses one form or the other.
  torch::Tensor unscale_and_update_on_device(const std::vector<torch::Tensor>& params,
                                             const std::function<void(torch::Tensor&)>& reduce_max = {});

  // The scale and the skipped steps so far (read from the device in the device form: a sync).
  double current_scale() const;
  std::int64_t skipped_steps() const;

 private:
  std::vector<torch::Tensor> gradients_of(const std::vector<torch::Tensor>& params) const;

  Options options_;
  double scale_;
  torch::Tensor device_scale_;  // scale_ on the loss's device, from the first scale()
  int good_steps_ = 0;
  std::int64_t skipped_ = 0;
  // The device form's state: good steps in a row (int) and skipped steps (float), on the device.
  torch::Tensor growth_tracker_, device_skipped_;
};

}  // namespace xpuperf::train
