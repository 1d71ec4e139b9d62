#pragma once
// The host half of offload_optimizer.h: torch::optim's Adam / AdamW update over float arrays, in
// plain arithmetic compiled on its own with -fno-math-errno so that the compiler vectorises the
// whole loop, square root included. Torch-free.

#include <cstdint>

namespace xpuperf::optim {

// What one step's update multiplies by, in float as ATen's operators take their scalars.
struct CpuAdamCoefficients {
  bool decoupled;      // AdamW: p·(1 − lr·wd); Adam: g + wd·p
  float decay_factor;  // 1 − lr·wd
  float weight_decay, beta1, one_minus_beta1, beta2, one_minus_beta2;
  float sqrt_correction2;  // √(1 − β2^step)
  float eps;
  float neg_step_size;       // −lr / (1 − β1^step)
  float gradient_scale = 1;  // each gradient multiplied by it first (gradient clipping's factor)
};

// Elements [begin, end), g the gradient times gradient_scale: m·β1 + (1 − β1)·g; v·β2 + (1 − β2)·g·g; p + (−lr / c1)·(m
// / (√v / √c2 + ε)), the operations of torch::optim in their order.
void cpu_adam(float* p, float* m, float* v, const float* g, std::int64_t begin, std::int64_t end,
              const CpuAdamCoefficients& c);

// The same with a bf16 parameter on the device: `exchange` holds the gradient in bf16 (its bits) and
// receives the updated weight in bf16, rounded as ATen's cast (to nearest, ties to even): one host
// buffer of 2 bytes an element each way instead of a float gradient in and a float weight out.
void cpu_adam_bf16(float* p, float* m, float* v, std::uint16_t* exchange, std::int64_t begin, std::int64_t end,
                   const CpuAdamCoefficients& c);

}  // namespace xpuperf::optim
