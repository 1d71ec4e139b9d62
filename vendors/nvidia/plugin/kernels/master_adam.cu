#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/master_adam.h"

namespace xpuperf::nvidia::kernels {
namespace {

// PyTorch's fused Adam arithmetic (its adam_math), element by element in float.
__device__ __forceinline__ void adam_element(const MasterAdam& a, float divisor, float& master, float& m, float& v,
                                             float g) {
  g /= divisor;
  if (a.weight_decay != 0) {
    if (a.decoupled)
      master -= a.lr * a.weight_decay * master;
    else
      g += master * a.weight_decay;
  }
  m = a.beta1 * m + (1 - a.beta1) * g;
  v = a.beta2 * v + (1 - a.beta2) * g * g;
  const float denom = sqrtf(v) / a.bias_correction2_sqrt + a.eps;
  master -= (a.lr / a.bias_correction1) * m / denom;
}

// Four elements a thread and iteration: 16-byte loads of the floats, 8-byte loads of the bf16s.
__global__ void master_adam_vec4(MasterAdam a, float4* master, float4* m, float4* v, const uint2* grad, uint2* weight,
                                 std::int64_t quads) {
  const float divisor = a.grad_divisor ? *a.grad_divisor : 1.0f;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < quads;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float4 w = master[i], mm = m[i], vv = v[i];
    const uint2 graw = grad[i];
    const __nv_bfloat162 g01 = *reinterpret_cast<const __nv_bfloat162*>(&graw.x);
    const __nv_bfloat162 g23 = *reinterpret_cast<const __nv_bfloat162*>(&graw.y);
    adam_element(a, divisor, w.x, mm.x, vv.x, __low2float(g01));
    adam_element(a, divisor, w.y, mm.y, vv.y, __high2float(g01));
    adam_element(a, divisor, w.z, mm.z, vv.z, __low2float(g23));
    adam_element(a, divisor, w.w, mm.w, vv.w, __high2float(g23));
    master[i] = w;
    m[i] = mm;
    v[i] = vv;
    uint2 out;
    *reinterpret_cast<__nv_bfloat162*>(&out.x) = __floats2bfloat162_rn(w.x, w.y);
    *reinterpret_cast<__nv_bfloat162*>(&out.y) = __floats2bfloat162_rn(w.z, w.w);
    weight[i] = out;
  }
}

__global__ void master_adam_scalar(MasterAdam a, float* master, float* m, float* v, const __nv_bfloat16* grad,
                                   __nv_bfloat16* weight, std::int64_t n) {
  const float divisor = a.grad_divisor ? *a.grad_divisor : 1.0f;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float w = master[i], mm = m[i], vv = v[i];
    adam_element(a, divisor, w, mm, vv, __bfloat162float(grad[i]));
    master[i] = w;
    m[i] = mm;
    v[i] = vv;
    weight[i] = __float2bfloat16_rn(w);
  }
}

bool aligned(const void* p, std::uintptr_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

}  // namespace

const char* master_adam_step(const MasterAdam& a, float* master, float* exp_avg, float* exp_avg_sq, const void* grad,
                             void* weight, std::int64_t n, void* stream) {
  if (n <= 0) return nullptr;
  const auto s = static_cast<cudaStream_t>(stream);
  constexpr int kThreads = 256;
  // Enough blocks to fill the GPU several times over; the loops stride over the rest.
  const auto blocks_for = [](std::int64_t items) {
    return static_cast<unsigned>(std::min<std::int64_t>((items + kThreads - 1) / kThreads, 132 * 16));
  };
  const bool vec = n % 4 == 0 && aligned(master, 16) && aligned(exp_avg, 16) && aligned(exp_avg_sq, 16) &&
                   aligned(grad, 8) && aligned(weight, 8);
  if (vec)
    master_adam_vec4<<<blocks_for(n / 4), kThreads, 0, s>>>(
        a, reinterpret_cast<float4*>(master), reinterpret_cast<float4*>(exp_avg), reinterpret_cast<float4*>(exp_avg_sq),
        static_cast<const uint2*>(grad), static_cast<uint2*>(weight), n / 4);
  else
    master_adam_scalar<<<blocks_for(n), kThreads, 0, s>>>(a, master, exp_avg, exp_avg_sq,
                                                          static_cast<const __nv_bfloat16*>(grad),
                                                          static_cast<__nv_bfloat16*>(weight), n);
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}

}  // namespace xpuperf::nvidia::kernels
