#include "xpuperf/optim/cpu_adam.h"

#include <cmath>
#include <cstring>

namespace xpuperf::optim {
namespace {

// One element's update, in torch::optim's order; `grad` in float.
inline void adam_element(float grad, float& p, float& m, float& v, const CpuAdamCoefficients& k) {
  grad = grad * k.gradient_scale;
  float w = p;
  if (k.decoupled)
    w = w * k.decay_factor;
  else
    grad = grad + k.weight_decay * w;
  const float mi = m * k.beta1 + k.one_minus_beta1 * grad;
  const float vi = v * k.beta2 + (k.one_minus_beta2 * grad) * grad;
  m = mi;
  v = vi;
  const float denom = std::sqrt(vi) / k.sqrt_correction2 + k.eps;
  p = w + k.neg_step_size * (mi / denom);
}

inline float from_bf16(std::uint16_t bits) {
  const std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Rounded to the nearest bf16, ties to even: ATen's float-to-bf16 cast (c10's round_to_nearest_even,
// NaN to its quiet NaN), in integer arithmetic the compiler vectorises.
inline std::uint16_t to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const std::uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return static_cast<std::uint16_t>(f != f ? 0x7FC0u : rounded);
}

// The update is compute-bound in the core's cache (a square root and two divisions an element):
// SSE2 alone gave 0.6 billion elements a second a core, AVX-512 1.3 (this project's AMD EPYC).
// The loader picks the clone for the CPU it runs on. (Clang takes the clones only on a function
// whose every declaration carries them: these, not the header's.)
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__APPLE__)
#define XPUPERF_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define XPUPERF_CPU_CLONES
#endif

XPUPERF_CPU_CLONES
void adam_loop(float* __restrict p, float* __restrict m, float* __restrict v, const float* __restrict g,
               std::int64_t begin, std::int64_t end, const CpuAdamCoefficients& c) {
  const CpuAdamCoefficients k = c;  // in registers, not re-read through the pointers each element
  for (std::int64_t i = begin; i < end; ++i) adam_element(g[i], p[i], m[i], v[i], k);
}

XPUPERF_CPU_CLONES
void adam_bf16_loop(float* __restrict p, float* __restrict m, float* __restrict v, std::uint16_t* __restrict exchange,
                    std::int64_t begin, std::int64_t end, const CpuAdamCoefficients& c) {
  const CpuAdamCoefficients k = c;
  for (std::int64_t i = begin; i < end; ++i) {
    adam_element(from_bf16(exchange[i]), p[i], m[i], v[i], k);
    exchange[i] = to_bf16(p[i]);
  }
}

}  // namespace

void cpu_adam(float* p, float* m, float* v, const float* g, std::int64_t begin, std::int64_t end,
              const CpuAdamCoefficients& c) {
  adam_loop(p, m, v, g, begin, end, c);
}

void cpu_adam_bf16(float* p, float* m, float* v, std::uint16_t* exchange, std::int64_t begin, std::int64_t end,
                   const CpuAdamCoefficients& c) {
  adam_bf16_loop(p, m, v, exchange, begin, end, c);
}

}  // namespace xpuperf::optim
