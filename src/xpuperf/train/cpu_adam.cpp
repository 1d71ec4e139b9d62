#include "xpuperf/train/cpu_adam.h"

#include <cmath>

namespace xpuperf::train {

void cpu_adam(float* __restrict p, float* __restrict m, float* __restrict v, const float* __restrict g,
              std::int64_t begin, std::int64_t end, const CpuAdamCoefficients& c) {
  const CpuAdamCoefficients k = c;  // in registers, not re-read through the pointers each element
  for (std::int64_t i = begin; i < end; ++i) {
    float grad = g[i], w = p[i];
    if (k.decoupled)
      w = w * k.decay_factor;
    else
      grad = grad + k.weight_decay * w;
    const float mi = m[i] * k.beta1 + k.one_minus_beta1 * grad;
    const float vi = v[i] * k.beta2 + (k.one_minus_beta2 * grad) * grad;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / k.sqrt_correction2 + k.eps;
    p[i] = w + k.neg_step_size * (mi / denom);
  }
}

}  // namespace xpuperf::train
