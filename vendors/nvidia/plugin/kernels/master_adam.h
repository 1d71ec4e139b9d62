#pragma once
// Adam / AdamW on fp32 master weights whose model copies are bf16 (`bf16_weights: true`), one pass a
// tensor: the bf16 gradient in, the master and both moments updated in float, the master rounded to
// bf16 into the model's weight. ATen's fused AdamW reads and writes tensors of one type, so the same
// step through it takes a cast of each gradient to float before and a cast of each master to bf16
// after (12 more bytes an element); with fp32 weights under autocast the model casts every weight to
// bf16 each forward and each gradient back to float. Torch-free (raw pointers, the stream as void*),
// like fused_kernels.h.

#include <cstdint>

namespace xpuperf::nvidia::kernels {

struct MasterAdam {
  float lr = 0, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0;
  bool decoupled = true;                // AdamW (decay applied to the weight) or Adam (added to the gradient)
  float bias_correction1 = 1;           // 1 - beta1^step
  float bias_correction2_sqrt = 1;      // sqrt(1 - beta2^step)
  const float* grad_divisor = nullptr;  // a float on the device each gradient is divided by (clipping), or null
};

// master, exp_avg, exp_avg_sq: n floats; grad and weight: n bf16 (weight written). Returns null when
// launched, else CUDA's error text.
const char* master_adam_step(const MasterAdam& a, float* master, float* exp_avg, float* exp_avg_sq, const void* grad,
                             void* weight, std::int64_t n, void* stream);

}  // namespace xpuperf::nvidia::kernels
