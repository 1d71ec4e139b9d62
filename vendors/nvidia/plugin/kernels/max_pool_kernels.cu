#include <cuda_runtime.h>

#include <type_traits>

#include "kernels/element.cuh"
#include "kernels/max_pool_kernels.h"

namespace xpuperf::nvidia::kernels {
namespace {

constexpr int kThreads = 256;

// The winners of a pack's elements: a byte each.
template <int N>
struct alignas(N) Winners {
  std::uint8_t v[N];
};

// One thread a pack of an output position's channels.
template <typename T>
__global__ void max_pool_forward_kernel(const T* __restrict__ x, T* __restrict__ y, std::uint8_t* __restrict__ winner,
                                        MaxPoolShape s, std::int64_t out_h, std::int64_t out_w, std::int64_t packs,
                                        std::int64_t total) {
  constexpr int K = Pack<T>::kSize;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const std::int64_t pack = i % packs, ow = (i / packs) % out_w, oh = (i / (packs * out_w)) % out_h,
                     n = i / (packs * out_w * out_h);
  float best[K];
  Winners<K> won;
#pragma unroll
  for (int k = 0; k < K; ++k) best[k] = -INFINITY, won.v[k] = 0;
  const auto* in = reinterpret_cast<const Pack<T>*>(x);
  const std::int64_t h0 = oh * s.stride - s.padding, w0 = ow * s.stride - s.padding;
  bool first = true;
  for (int kh = 0; kh < s.kernel; ++kh) {
    const std::int64_t h = h0 + kh;
    if (h < 0 || h >= s.height) continue;
    for (int kw = 0; kw < s.kernel; ++kw) {
      const std::int64_t w = w0 + kw;
      if (w < 0 || w >= s.width) continue;
      const Pack<T> p = in[((n * s.height + h) * s.width + w) * packs + pack];
      const auto at = static_cast<std::uint8_t>(kh * s.kernel + kw);
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const float v = to_float(p.v[k]);
        if (first || v > best[k] || isnan(v)) best[k] = v, won.v[k] = at;
      }
      first = false;
    }
  }
  Pack<T> out;
#pragma unroll
  for (int k = 0; k < K; ++k) out.v[k] = from_float<T>(best[k]);
  reinterpret_cast<Pack<T>*>(y)[i] = out;
  if (winner != nullptr) reinterpret_cast<Winners<K>*>(winner)[i] = won;
}

// One thread a pack of an input position's channels: the windows that hold the position, and of each,
// the gradient where this position won.
template <typename T>
__global__ void max_pool_backward_kernel(const T* __restrict__ grad_y, const std::uint8_t* __restrict__ winner,
                                         T* __restrict__ grad_x, MaxPoolShape s, std::int64_t out_h, std::int64_t out_w,
                                         std::int64_t packs, std::int64_t total) {
  constexpr int K = Pack<T>::kSize;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const std::int64_t pack = i % packs, w = (i / packs) % s.width, h = (i / (packs * s.width)) % s.height,
                     n = i / (packs * s.width * s.height);
  float sum[K] = {};
  // Windows oh with oh × stride − padding ≤ h ≤ oh × stride − padding + kernel − 1.
  const std::int64_t oh_first = max(std::int64_t{0}, (h + s.padding - s.kernel + s.stride) / s.stride),
                     oh_last = min(out_h - 1, (h + s.padding) / s.stride);
  const std::int64_t ow_first = max(std::int64_t{0}, (w + s.padding - s.kernel + s.stride) / s.stride),
                     ow_last = min(out_w - 1, (w + s.padding) / s.stride);
  const auto* g = reinterpret_cast<const Pack<T>*>(grad_y);
  const auto* won = reinterpret_cast<const Winners<K>*>(winner);
  for (std::int64_t oh = oh_first; oh <= oh_last; ++oh) {
    const auto kh = static_cast<int>(h - (oh * s.stride - s.padding));
    for (std::int64_t ow = ow_first; ow <= ow_last; ++ow) {
      const auto at = static_cast<std::uint8_t>(kh * s.kernel + (w - (ow * s.stride - s.padding)));
      const std::int64_t o = ((n * out_h + oh) * out_w + ow) * packs + pack;
      const Winners<K> wv = won[o];
      bool any = false;
#pragma unroll
      for (int k = 0; k < K; ++k) any |= wv.v[k] == at;
      if (!any) continue;
      const Pack<T> gv = g[o];
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (wv.v[k] == at) sum[k] += to_float(gv.v[k]);
    }
  }
  Pack<T> out;
#pragma unroll
  for (int k = 0; k < K; ++k) out.v[k] = from_float<T>(sum[k]);
  reinterpret_cast<Pack<T>*>(grad_x)[i] = out;
}

const char* check_shape(Element type, const MaxPoolShape& s) {
  if (s.channels <= 0 || s.channels % pack_elements(type) != 0) return "the channels are not whole 16-byte packs";
  if (s.kernel < 1 || s.kernel * s.kernel > 256 || s.stride < 1 || s.padding < 0 || 2 * s.padding > s.kernel)
    return "the window is not one the kernels take";
  if (s.out_height() < 1 || s.out_width() < 1) return "the window is larger than the padded input";
  return nullptr;
}

unsigned blocks(std::int64_t total) {
  return static_cast<unsigned>((total + kThreads - 1) / kThreads);
}

}  // namespace

const char* max_pool_forward(Element type, const void* x, void* y, std::uint8_t* winner, const MaxPoolShape& shape,
                             void* stream) {
  if (const char* bad = check_shape(type, shape)) return bad;
  const std::int64_t packs = shape.channels / pack_elements(type), out_h = shape.out_height(),
                     out_w = shape.out_width(), total = shape.batch * out_h * out_w * packs;
  if (total == 0) return nullptr;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    max_pool_forward_kernel<T><<<blocks(total), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T*>(x), static_cast<T*>(y), winner, shape, out_h, out_w, packs, total);
  });
  return launch_error();
}

const char* max_pool_backward(Element type, const void* grad_y, const std::uint8_t* winner, void* grad_x,
                              const MaxPoolShape& shape, void* stream) {
  if (const char* bad = check_shape(type, shape)) return bad;
  const std::int64_t packs = shape.channels / pack_elements(type),
                     total = shape.batch * shape.height * shape.width * packs;
  if (total == 0) return nullptr;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    max_pool_backward_kernel<T><<<blocks(total), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T*>(grad_y), winner, static_cast<T*>(grad_x), shape, shape.out_height(), shape.out_width(),
        packs, total);
  });
  return launch_error();
}

}  // namespace xpuperf::nvidia::kernels
