#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "kernels/batch_norm_kernels.h"
#include "kernels/element.cuh"

namespace xpuperf::nvidia::kernels {
namespace {

// Every kernel here maps a block's threads onto a tile of the (rows, channels) layout: x threads
// along the channels, a 16-byte pack of channels each (so that a thread keeps its channels'
// coefficients in registers over all its rows), y threads along the rows, and walks the rows in
// steps of the grid's height. The reductions leave a partial sum a block row, which a second
// kernel adds up per channel.
constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 4;  // one wave: as many blocks as fit beside each other (about 56 registers a thread)

struct Tiling {
  int tx = 1, ty = 1;          // threads along the packs, along the rows
  int grid_x = 1, grid_y = 1;  // blocks along the packs, along the rows
  std::int64_t packs = 0;
};

Tiling tiling(Element type, std::int64_t rows, std::int64_t channels) {
  Tiling t;
  t.packs = channels / pack_elements(type);
  // The widest tile of whole packs up to a warp: no idle threads at the tile's edge.
  for (int d = 32; d >= 1; --d)
    if (t.packs % d == 0) {
      t.tx = d;
      break;
    }
  t.ty = kThreads / t.tx;
  t.grid_x = static_cast<int>(t.packs / t.tx);
  const std::int64_t wanted = std::max<std::int64_t>(1, kBlocksPerSm * multiprocessors() / t.grid_x);
  t.grid_y =
      static_cast<int>(std::clamp<std::int64_t>((rows + t.ty - 1) / t.ty, 1, std::min<std::int64_t>(wanted, 65535)));
  return t;
}

template <typename T>
__device__ inline bool passes(Activation act, T y) {
  const float v = to_float(y);
  return act == Activation::None || (v > 0.0f && (act == Activation::Relu || v < 6.0f));
}

// Chan's merge of (n, mean, m2) with (nb, mean_b, m2_b).
__device__ inline void merge(float& n, float& mean, float& m2, float nb, float mean_b, float m2_b) {
  if (nb == 0) return;
  const float total = n + nb, delta = mean_b - mean, share = nb / total;
  mean += delta * share;
  m2 += m2_b + delta * delta * n * share;
  n = total;
}

// Adds up the block's columns of `values` (kValues floats a thread) over threadIdx.y, into the
// threads of row 0, through `shared` (blockDim.x × blockDim.y × kValues floats). Welford: the values
// are n, then K means, then K m2 (merged by Chan's formula), else plain sums.
template <int kValues, bool kWelford>
__device__ void reduce_over_rows(float (&v)[kValues], float* shared) {
  constexpr int K = (kValues - 1) / 2;
  float* mine = shared + (threadIdx.y * blockDim.x + threadIdx.x) * kValues;
#pragma unroll
  for (int i = 0; i < kValues; ++i) mine[i] = v[i];
  __syncthreads();
  for (int active = blockDim.y; active > 1;) {
    const int half = (active + 1) / 2;
    if (static_cast<int>(threadIdx.y) < active - half) {
      const float* other = shared + ((threadIdx.y + half) * blockDim.x + threadIdx.x) * kValues;
      if constexpr (kWelford) {
#pragma unroll
        for (int k = 0; k < K; ++k) {
          float n = v[0];
          merge(n, v[1 + k], v[1 + K + k], other[0], other[1 + k], other[1 + K + k]);
        }
        v[0] += other[0];
      } else {
#pragma unroll
        for (int i = 0; i < kValues; ++i) v[i] += other[i];
      }
#pragma unroll
      for (int i = 0; i < kValues; ++i) mine[i] = v[i];
    }
    active = half;
    __syncthreads();
  }
}

// Welford's mean and m2 a channel over the block's rows: partial_mean / partial_m2 (grid_y ×
// channels) and partial_n (grid_y).
template <typename T>
__global__ void batch_norm_statistics_kernel(const T* __restrict__ x, float* __restrict__ partial_mean,
                                             float* __restrict__ partial_m2, float* __restrict__ partial_n,
                                             std::int64_t rows, std::int64_t packs) {
  constexpr int K = Pack<T>::kSize;
  extern __shared__ float shared[];
  const std::int64_t pack = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float v[1 + 2 * K] = {};  // n, means, m2s
  const auto* in = reinterpret_cast<const Pack<T>*>(x);
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += static_cast<std::int64_t>(gridDim.y) * blockDim.y) {
    const Pack<T> p = in[r * packs + pack];
    v[0] += 1.0f;
    const float inv = 1.0f / v[0];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const float value = to_float(p.v[k]), delta = value - v[1 + k];
      v[1 + k] += delta * inv;
      v[1 + K + k] += delta * (value - v[1 + k]);
    }
  }
  reduce_over_rows<1 + 2 * K, true>(v, shared);
  if (threadIdx.y != 0) return;
  const std::int64_t channels = packs * K, at = blockIdx.y * channels + pack * K;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    partial_mean[at + k] = v[1 + k];
    partial_m2[at + k] = v[1 + K + k];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) partial_n[blockIdx.y] = v[0];
}

// The finishing kernels' block: 32 channels, each with 32 threads adding up a share of the partials
// (the partials of one channel are a column: the warp reads rows of 32 channels).
constexpr int kFinishChannels = 32, kFinishLanes = 32;

// The batch's mean and invstd a channel from the partials, and the running statistics' update.
__global__ void batch_norm_statistics_finish_kernel(const float* __restrict__ partial_mean,
                                                    const float* __restrict__ partial_m2,
                                                    const float* __restrict__ partial_n, int parts,
                                                    std::int64_t channels, float eps, float momentum,
                                                    float* __restrict__ mean_out, float* __restrict__ invstd_out,
                                                    float* __restrict__ running_mean, float* __restrict__ running_var) {
  __shared__ float shared[kFinishChannels * kFinishLanes * 3];
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float v[3] = {};  // n, mean, m2
  if (c < channels)
#pragma unroll 4
    for (int p = threadIdx.y; p < parts; p += blockDim.y)
      merge(v[0], v[1], v[2], partial_n[p], partial_mean[p * channels + c], partial_m2[p * channels + c]);
  reduce_over_rows<3, true>(v, shared);
  if (threadIdx.y != 0 || c >= channels) return;
  const float n = v[0], mean = v[1], m2 = v[2];
  mean_out[c] = mean;
  invstd_out[c] = 1.0f / sqrtf(m2 / n + eps);
  if (running_mean != nullptr) {
    running_mean[c] = momentum * mean + (1.0f - momentum) * running_mean[c];
    running_var[c] = momentum * (m2 / (n - 1.0f)) + (1.0f - momentum) * running_var[c];
  }
}

template <typename T, bool kResidual>
__global__ void batch_norm_forward_kernel(const T* __restrict__ x, const T* __restrict__ residual, T* __restrict__ y,
                                          const float* __restrict__ weight, const float* __restrict__ bias,
                                          const float* __restrict__ mean, const float* __restrict__ invstd,
                                          std::int64_t rows, std::int64_t packs, Activation act) {
  constexpr int K = Pack<T>::kSize;
  const std::int64_t pack = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float w[K], b[K], m[K], s[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const std::int64_t c = pack * K + k;
    w[k] = weight[c], b[k] = bias[c], m[k] = mean[c], s[k] = invstd[c];
  }
  const auto* in = reinterpret_cast<const Pack<T>*>(x);
  const auto* res = reinterpret_cast<const Pack<T>*>(residual);
  auto* out = reinterpret_cast<Pack<T>*>(y);
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += static_cast<std::int64_t>(gridDim.y) * blockDim.y) {
    const std::int64_t at = r * packs + pack;
    const Pack<T> p = in[at];
    Pack<T> q;
    if constexpr (kResidual) q = res[at];
    Pack<T> o;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      // ATen's order: w × (x − mean) × invstd + b, rounded; the add rounded again.
      float v = rounded<T>(w[k] * (to_float(p.v[k]) - m[k]) * s[k] + b[k]);
      if constexpr (kResidual) v = rounded<T>(v + to_float(q.v[k]));
      if (act != Activation::None) v = fmaxf(v, 0.0f);
      if (act == Activation::Relu6) v = fminf(v, 6.0f);
      o.v[k] = from_float<T>(v);
    }
    out[at] = o;
  }
}

// Σ g and Σ g (x − mean) a channel over the block's rows into partial_g / partial_gx (grid_y ×
// channels); g written to grad_residual when given.
template <typename T, bool kWriteG>
__global__ void batch_norm_backward_reduce_kernel(const T* __restrict__ x, const T* __restrict__ y,
                                                  const T* __restrict__ grad_y, const float* __restrict__ mean,
                                                  T* __restrict__ grad_residual, float* __restrict__ partial_g,
                                                  float* __restrict__ partial_gx, std::int64_t rows, std::int64_t packs,
                                                  Activation act) {
  constexpr int K = Pack<T>::kSize;
  extern __shared__ float shared[];
  const std::int64_t pack = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float m[K];
#pragma unroll
  for (int k = 0; k < K; ++k) m[k] = mean[pack * K + k];
  float v[1 + 2 * K] = {};  // unused, Σ g, Σ g (x − mean)
  const auto* in = reinterpret_cast<const Pack<T>*>(x);
  const auto* out = reinterpret_cast<const Pack<T>*>(y);
  const auto* grad = reinterpret_cast<const Pack<T>*>(grad_y);
  auto* grad_res = reinterpret_cast<Pack<T>*>(grad_residual);
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += static_cast<std::int64_t>(gridDim.y) * blockDim.y) {
    const std::int64_t at = r * packs + pack;
    const Pack<T> p = in[at];
    Pack<T> g = grad[at];
    if (act != Activation::None) {
      const Pack<T> q = out[at];
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (!passes(act, q.v[k])) g.v[k] = from_float<T>(0.0f);
    }
    if constexpr (kWriteG) grad_res[at] = g;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const float gk = to_float(g.v[k]);
      v[1 + k] += gk;
      v[1 + K + k] += gk * (to_float(p.v[k]) - m[k]);
    }
  }
  reduce_over_rows<1 + 2 * K, false>(v, shared);
  if (threadIdx.y != 0) return;
  const std::int64_t channels = packs * K, at = blockIdx.y * channels + pack * K;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    partial_g[at + k] = v[1 + k];
    partial_gx[at + k] = v[1 + K + k];
  }
}

// The parameters' gradients, and the coefficients of grad_x (ATen's): Σg / n, invstd² Σ g (x − mean) / n,
// w × invstd, in coefficients (3 × channels).
__global__ void batch_norm_backward_finish_kernel(const float* __restrict__ partial_g,
                                                  const float* __restrict__ partial_gx, int parts,
                                                  std::int64_t channels, std::int64_t rows,
                                                  const float* __restrict__ weight, const float* __restrict__ invstd,
                                                  float* __restrict__ grad_weight, float* __restrict__ grad_bias,
                                                  float* __restrict__ coefficients) {
  __shared__ float shared[kFinishChannels * kFinishLanes * 3];
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float v[3] = {};  // unused, Σ g, Σ g (x − mean)
  if (c < channels)
#pragma unroll 4
    for (int p = threadIdx.y; p < parts; p += blockDim.y) {
      v[1] += partial_g[p * channels + c];
      v[2] += partial_gx[p * channels + c];
    }
  reduce_over_rows<3, false>(v, shared);
  if (threadIdx.y != 0 || c >= channels) return;
  const float sum_g = v[1], sum_gx = v[2];
  const float s = invstd[c], norm = 1.0f / static_cast<float>(rows);
  grad_bias[c] = sum_g;
  grad_weight[c] = sum_gx * s;
  coefficients[c] = sum_g * norm;
  coefficients[channels + c] = s * s * sum_gx * norm;
  coefficients[2 * channels + c] = weight[c] * s;
}

// grad_x = (g − Σg / n − (x − mean) × factor_1) × factor_2, g from grad_y through the activation's
// mask, or (kFromG) read as it is.
template <typename T, bool kFromG>
__global__ void batch_norm_backward_kernel(const T* __restrict__ x, const T* __restrict__ y, const T* __restrict__ grad,
                                           const float* __restrict__ mean, const float* __restrict__ coefficients,
                                           T* __restrict__ grad_x, std::int64_t rows, std::int64_t packs,
                                           Activation act) {
  constexpr int K = Pack<T>::kSize;
  const std::int64_t pack = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t channels = packs * K;
  float m[K], mean_g[K], f1[K], f2[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const std::int64_t c = pack * K + k;
    m[k] = mean[c], mean_g[k] = coefficients[c], f1[k] = coefficients[channels + c],
    f2[k] = coefficients[2 * channels + c];
  }
  const auto* in = reinterpret_cast<const Pack<T>*>(x);
  const auto* out = reinterpret_cast<const Pack<T>*>(y);
  const auto* gin = reinterpret_cast<const Pack<T>*>(grad);
  auto* gx = reinterpret_cast<Pack<T>*>(grad_x);
  const bool masked = !kFromG && act != Activation::None;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += static_cast<std::int64_t>(gridDim.y) * blockDim.y) {
    const std::int64_t at = r * packs + pack;
    const Pack<T> p = in[at];
    const Pack<T> g = gin[at];
    Pack<T> q;
    if (masked) q = out[at];
    Pack<T> o;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const float gk = masked && !passes(act, q.v[k]) ? 0.0f : to_float(g.v[k]);
      o.v[k] = from_float<T>((gk - mean_g[k] - (to_float(p.v[k]) - m[k]) * f1[k]) * f2[k]);
    }
    gx[at] = o;
  }
}

const char* check_layout(Element type, std::int64_t rows, std::int64_t channels) {
  if (channels <= 0 || channels % pack_elements(type) != 0) return "the channels are not whole 16-byte packs";
  if (rows < 2) return "batch norm in training needs more than one value a channel";
  return nullptr;
}

// The launch shapes of both directions: the tiled kernels', the finishing kernels'.
struct Launch {
  Tiling t;
  cudaStream_t stream;
  dim3 block, grid, finish_block, finish_grid;
  Launch(Element type, std::int64_t rows, std::int64_t channels, void* s)
      : t(tiling(type, rows, channels)),
        stream(static_cast<cudaStream_t>(s)),
        block(t.tx, t.ty),
        grid(t.grid_x, t.grid_y),
        finish_block(kFinishChannels, kFinishLanes),
        finish_grid(static_cast<unsigned>((channels + kFinishChannels - 1) / kFinishChannels)) {}
  // The reductions' shared memory: a thread's n, K sums and K more.
  template <typename T>
  std::size_t reduce_shared() const {
    return static_cast<std::size_t>(t.tx) * t.ty * (1 + 2 * Pack<T>::kSize) * sizeof(float);
  }
};

}  // namespace

std::int64_t batch_norm_workspace(Element type, std::int64_t rows, std::int64_t channels) {
  const Tiling t = tiling(type, rows, channels);
  return std::max(t.grid_y * (2 * channels + 1), t.grid_y * 2 * channels + 3 * channels);
}

const char* batch_norm_forward(Element type, const void* x, const void* residual, void* y, const float* weight,
                               const float* bias, float* mean, float* invstd, float* running_mean, float* running_var,
                               float* workspace, std::int64_t rows, std::int64_t channels, float momentum, float eps,
                               Activation act, void* stream) {
  if (const char* bad = check_layout(type, rows, channels)) return bad;
  const Launch l(type, rows, channels, stream);
  const Tiling& t = l.t;
  const auto s = l.stream;
  const auto &block = l.block, &grid = l.grid;
  float* partial_mean = workspace;
  float* partial_m2 = workspace + t.grid_y * channels;
  float* partial_n = workspace + 2 * t.grid_y * channels;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const std::size_t shared = l.reduce_shared<T>();
    batch_norm_statistics_kernel<T>
        <<<grid, block, shared, s>>>(static_cast<const T*>(x), partial_mean, partial_m2, partial_n, rows, t.packs);
    batch_norm_statistics_finish_kernel<<<l.finish_grid, l.finish_block, 0, s>>>(
        partial_mean, partial_m2, partial_n, t.grid_y, channels, eps, momentum, mean, invstd, running_mean,
        running_var);
    if (residual != nullptr)
      batch_norm_forward_kernel<T, true><<<grid, block, 0, s>>>(static_cast<const T*>(x),
                                                                static_cast<const T*>(residual), static_cast<T*>(y),
                                                                weight, bias, mean, invstd, rows, t.packs, act);
    else
      batch_norm_forward_kernel<T, false><<<grid, block, 0, s>>>(static_cast<const T*>(x), nullptr, static_cast<T*>(y),
                                                                 weight, bias, mean, invstd, rows, t.packs, act);
  });
  return launch_error();
}

const char* batch_norm_backward(Element type, const void* x, const void* y, const void* grad_y, const float* weight,
                                const float* mean, const float* invstd, void* grad_x, void* grad_residual,
                                float* grad_weight, float* grad_bias, float* workspace, std::int64_t rows,
                                std::int64_t channels, Activation act, void* stream) {
  if (const char* bad = check_layout(type, rows, channels)) return bad;
  const Launch l(type, rows, channels, stream);
  const Tiling& t = l.t;
  const auto s = l.stream;
  const auto &block = l.block, &grid = l.grid;
  float* partial_g = workspace;
  float* partial_gx = workspace + t.grid_y * channels;
  float* coefficients = workspace + 2 * t.grid_y * channels;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const std::size_t shared = l.reduce_shared<T>();
    const auto* xt = static_cast<const T*>(x);
    const auto* yt = static_cast<const T*>(y);
    const auto* gt = static_cast<const T*>(grad_y);
    auto* rt = static_cast<T*>(grad_residual);
    if (rt != nullptr)
      batch_norm_backward_reduce_kernel<T, true>
          <<<grid, block, shared, s>>>(xt, yt, gt, mean, rt, partial_g, partial_gx, rows, t.packs, act);
    else
      batch_norm_backward_reduce_kernel<T, false>
          <<<grid, block, shared, s>>>(xt, yt, gt, mean, nullptr, partial_g, partial_gx, rows, t.packs, act);
    batch_norm_backward_finish_kernel<<<l.finish_grid, l.finish_block, 0, s>>>(
        partial_g, partial_gx, t.grid_y, channels, rows, weight, invstd, grad_weight, grad_bias, coefficients);
    if (rt != nullptr)
      batch_norm_backward_kernel<T, true>
          <<<grid, block, 0, s>>>(xt, yt, rt, mean, coefficients, static_cast<T*>(grad_x), rows, t.packs, act);
    else
      batch_norm_backward_kernel<T, false>
          <<<grid, block, 0, s>>>(xt, yt, gt, mean, coefficients, static_cast<T*>(grad_x), rows, t.packs, act);
  });
  return launch_error();
}

}  // namespace xpuperf::nvidia::kernels
