#pragma once
// What the models' CUDA kernels share: the element types' conversions with ATen's rounding, 16-byte
// packs of elements, a block-wide sum, the device's multiprocessors, the launch error and a launch for each
// element type. Included
// by .cu files only.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>

#include "kernels/fused_kernels.h"

namespace xpuperf::nvidia::kernels {
// Each .cu file that includes this has its own copy (no device linking across files).
namespace {

__device__ inline float to_float(float x) {
  return x;
}
__device__ inline float to_float(__half x) {
  return __half2float(x);
}
__device__ inline float to_float(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <typename T>
__device__ inline T from_float(float x);
template <>
__device__ inline float from_float<float>(float x) {
  return x;
}
template <>
__device__ inline __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
// x as an ATen kernel that writes the element type leaves it for the next kernel to read.
template <typename T>
__device__ inline float rounded(float x) {
  return to_float(from_float<T>(x));
}

// 16 bytes of elements: one vector load or store.
template <typename T>
struct alignas(16) Pack {
  static constexpr int kSize = 16 / sizeof(T);
  T v[kSize];
};

// The sum over the block (blockDim.x a multiple of 32), given to every thread.
__device__ float block_sum(float v) {
  __shared__ float warp_sums[32];
  __shared__ float total;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x / 32) ? warp_sums[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) total = v;
  }
  __syncthreads();
  return total;
}

// The current device's multiprocessors (an H100's 132 where CUDA cannot say): grids sized to fill it.
inline int multiprocessors() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    sms = 132;
  return sms;
}

// Programmatic dependent launch (Hopper and newer): a kernel launched with launch_overlapping may be
// scheduled while the kernel before it on the stream is still finishing, so that its launch does not
// wait for the GPU to drain; await_previous_kernel() at its start then holds it until the previous
// kernel's work is complete and visible, before it touches memory. Each such kernel also lets its own
// successor be scheduled early. In a CUDA graph the edge between the two stays programmatic. A decoding
// step of one sequence is some 300 short kernels: the overlap took Llama-2-7B's step from 4.28 to
// 4.12 ms on an H200.
__device__ inline void await_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// On Hopper and newer, unless XPUPERF_SERIAL_LAUNCHES is set (to 1: for measuring what the overlap
// brings, or ruling it out). Each device's answer is kept: an eager decoding step launches some 300
// kernels, and need not ask CUDA for the compute capability each time.
inline bool overlapping_launches() {
  static const bool serial = [] {
    const char* v = std::getenv("XPUPERF_SERIAL_LAUNCHES");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  constexpr int kDevicesKept = 64;
  static std::atomic<signed char> known[kDevicesKept] = {};  // 0: not asked yet, 1: overlaps, -1: does not
  int device = 0;
  if (serial || cudaGetDevice(&device) != cudaSuccess) return false;
  const auto ask = [device] {
    int major = 0;
    return cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major >= 9;
  };
  if (device < 0 || device >= kDevicesKept) return ask();
  signed char answer = known[device].load(std::memory_order_relaxed);
  if (answer == 0) {
    answer = ask() ? 1 : -1;
    known[device].store(answer, std::memory_order_relaxed);
  }
  return answer > 0;
}

// kernel<<<grid, block, shared, stream>>>(args...), launched to overlap the previous kernel's end where
// the GPU can (the kernel must call await_previous_kernel() first).
template <typename... Params, typename... Args>
void launch_overlapping(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared, cudaStream_t stream,
                        Args... args) {
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = overlapping_launches() ? 1 : 0;
  cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
}

const char* launch_error() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}

// Calls f with a null pointer of the element type's CUDA type, so that one generic lambda launches
// a kernel for each of the three types.
template <typename F>
void for_element(Element type, F&& f) {
  switch (type) {
    case Element::Float:
      f(static_cast<float*>(nullptr));
      break;
    case Element::Half:
      f(static_cast<__half*>(nullptr));
      break;
    case Element::BFloat16:
      f(static_cast<__nv_bfloat16*>(nullptr));
      break;
  }
}

}  // namespace
}  // namespace xpuperf::nvidia::kernels
