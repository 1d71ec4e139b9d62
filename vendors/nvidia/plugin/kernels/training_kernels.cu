#include <cuda_runtime.h>
#include <curand_kernel.h>

#include <algorithm>
#include <type_traits>

#include "kernels/element.cuh"
#include "kernels/training_kernels.h"

namespace xpuperf::nvidia::kernels {
namespace {

// The norm kernels' block: up to 256 threads, each with P packs of the row (P a power of two up to
// kMaxPacks), kept in registers between the reduction and the output.
constexpr int kNormThreads = 256;
constexpr int kMaxPacks = 8;

// N elements of T in one access (a pack of x's width in delta's type: 8 bytes of bf16 beside 16 of float).
template <typename T, int N>
struct alignas(sizeof(T) * N) Chunk {
  T v[N];
};

// Dropout's kernel arguments (DeltaDropout, with 1 / (1 − p) worked out once).
struct DropoutArgs {
  float keep_below = 1, scale = 1;  // an element is kept when its uniform number in (0, 1] is ≤ keep_below
  unsigned long long seed = 0;
  const std::int64_t* call = nullptr;
  std::uint8_t* keep = nullptr;
};

DropoutArgs dropout_args(const DeltaDropout* d) {
  DropoutArgs a;
  if (d == nullptr || d->p <= 0) return a;
  a.keep_below = 1.0f - d->p;
  a.scale = 1.0f / (1.0f - d->p);
  a.seed = d->seed;
  a.call = d->call;
  a.keep = d->keep;
  return a;
}

// Applies dropout to the N delta values of pack `index` (numbers from Philox's subsequence `index`,
// at the call's offset: N ≤ 8, two draws of four) and writes their keep bytes.
template <int N>
__device__ inline void drop_pack(float (&d)[N], std::int64_t index, const DropoutArgs& a) {
  curandStatePhilox4_32_10_t state;
  curand_init(a.seed, static_cast<unsigned long long>(index), static_cast<unsigned long long>(*a.call) * 8, &state);
  float u[8];
  const float4 first = curand_uniform4(&state);
  u[0] = first.x, u[1] = first.y, u[2] = first.z, u[3] = first.w;
  if (N > 4) {
    const float4 second = curand_uniform4(&state);
    u[4] = second.x, u[5] = second.y, u[6] = second.z, u[7] = second.w;
  }
  Chunk<std::uint8_t, N> keep;
#pragma unroll
  for (int n = 0; n < N; ++n) {
    keep.v[n] = u[n] <= a.keep_below;
    d[n] = keep.v[n] ? d[n] * a.scale : 0.0f;
  }
  reinterpret_cast<Chunk<std::uint8_t, N>*>(a.keep)[index] = keep;
}

// RMSNorm (kLayer false: Hugging Face's LlamaRMSNorm, the normalised row rounded to X before the
// weight) or LayerNorm (kLayer true: ATen's layer_norm, centred, the weight and bias applied in float
// and rounded once) of x + delta, a row a block. The output is of type O: X, or D (what the next
// product takes under autocast: the float result rounded once to it, as casting it would).
template <typename X, typename D, typename O, int P, bool kLayer>
__global__ void norm_forward_kernel(const X* __restrict__ x, const D* __restrict__ delta, const X* __restrict__ weight,
                                    const X* __restrict__ bias, X* __restrict__ sum, O* __restrict__ out,
                                    D* __restrict__ out_low, float* __restrict__ mean_out, float* __restrict__ rstd,
                                    std::int64_t width, float eps, DropoutArgs drop) {
  constexpr int N = Pack<X>::kSize;
  const std::int64_t packs = width / N, at = static_cast<std::int64_t>(blockIdx.x) * packs;
  float v[P][N];
  float total = 0;
#pragma unroll
  for (int k = 0; k < P; ++k) {
    const std::int64_t j = threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x;
    if (j < packs) {
      Pack<X> a = reinterpret_cast<const Pack<X>*>(x)[at + j];
      if (delta) {
        const Chunk<D, N> d = reinterpret_cast<const Chunk<D, N>*>(delta)[at + j];
        float dv[N];
#pragma unroll
        for (int n = 0; n < N; ++n) dv[n] = to_float(d.v[n]);
        if (drop.keep) {
          drop_pack<N>(dv, at + j, drop);
#pragma unroll
          for (int n = 0; n < N; ++n) dv[n] = rounded<D>(dv[n]);  // dropout's output, in delta's type
        }
#pragma unroll
        for (int n = 0; n < N; ++n) a.v[n] = from_float<X>(to_float(a.v[n]) + dv[n]);
        reinterpret_cast<Pack<X>*>(sum)[at + j] = a;
      }
#pragma unroll
      for (int n = 0; n < N; ++n) {
        v[k][n] = to_float(a.v[n]);
        total += v[k][n];
      }
    }
  }
  const float mean = kLayer ? block_sum(total) / static_cast<float>(width) : 0.0f;
  float squares = 0;
#pragma unroll
  for (int k = 0; k < P; ++k) {
    const std::int64_t j = threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x;
    if (j < packs)
#pragma unroll
      for (int n = 0; n < N; ++n) squares += (v[k][n] - mean) * (v[k][n] - mean);
  }
  const float r = rsqrtf(block_sum(squares) / static_cast<float>(width) + eps);
  if (threadIdx.x == 0) {
    rstd[blockIdx.x] = r;
    if (kLayer) mean_out[blockIdx.x] = mean;
  }
#pragma unroll
  for (int k = 0; k < P; ++k) {
    const std::int64_t j = threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x;
    if (j < packs) {
      const Pack<X> w = reinterpret_cast<const Pack<X>*>(weight)[j];
      Chunk<O, N> o;
      if constexpr (kLayer) {
        const Pack<X> b = reinterpret_cast<const Pack<X>*>(bias)[j];
#pragma unroll
        for (int n = 0; n < N; ++n) o.v[n] = from_float<O>(to_float(w.v[n]) * (v[k][n] - mean) * r + to_float(b.v[n]));
      } else {
#pragma unroll
        for (int n = 0; n < N; ++n) o.v[n] = from_float<O>(rounded<X>(to_float(w.v[n]) * rounded<X>(v[k][n] * r)));
      }
      reinterpret_cast<Chunk<O, N>*>(out)[at + j] = o;
      if (out_low) {
        Chunk<D, N> low;
#pragma unroll
        for (int n = 0; n < N; ++n) low.v[n] = from_float<D>(to_float(o.v[n]));
        reinterpret_cast<Chunk<D, N>*>(out_low)[at + j] = low;
      }
    }
  }
}

// Rows blockIdx.x, + gridDim.x, ...: for each, the means over the row of the output's gradient
// (× weight) and of its product with the normalised row, then grad_x; the weight's (and LayerNorm's
// bias's) gradient summed in registers over the block's rows and written once.
template <typename X, typename D, typename O, int P, bool kLayer>
__global__ void norm_backward_kernel(const X* __restrict__ input, const X* __restrict__ weight,
                                     const float* __restrict__ mean_in, const float* __restrict__ rstd,
                                     const O* __restrict__ grad_out, const D* __restrict__ grad_low,
                                     const X* __restrict__ grad_sum, X* __restrict__ grad_x, D* __restrict__ grad_delta,
                                     float* __restrict__ weight_partials, float* __restrict__ bias_partials,
                                     std::int64_t rows, std::int64_t width, DropoutArgs drop) {
  constexpr int N = Pack<X>::kSize;
  const std::int64_t packs = width / N;
  float w[P][N], dw[P][N], db[P][N];
#pragma unroll
  for (int k = 0; k < P; ++k) {
    const std::int64_t j = threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x;
    const Pack<X> a = j < packs ? reinterpret_cast<const Pack<X>*>(weight)[j] : Pack<X>{};
#pragma unroll
    for (int n = 0; n < N; ++n) {
      w[k][n] = to_float(a.v[n]);
      dw[k][n] = 0;
      db[k][n] = 0;
    }
  }
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t at = row * packs;
    const float r = rstd[row], mean = kLayer ? mean_in[row] : 0.0f;
    float xh[P][N], gw[P][N];
    float dot = 0, plain = 0;
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const std::int64_t j = threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x;
      if (j < packs) {
        const Pack<X> a = reinterpret_cast<const Pack<X>*>(input)[at + j];
        const Chunk<O, N> g = grad_out ? reinterpret_cast<const Chunk<O, N>*>(grad_out)[at + j] : Chunk<O, N>{};
        const Chunk<D, N> gl = grad_low ? reinterpret_cast<const Chunk<D, N>*>(grad_low)[at + j] : Chunk<D, N>{};
#pragma unroll
        for (int n = 0; n < N; ++n) {
          xh[k][n] = (to_float(a.v[n]) - mean) * r;
          const float go = (grad_out ? to_float(g.v[n]) : 0.0f) + (grad_low ? to_float(gl.v[n]) : 0.0f);
          gw[k][n] = go * w[k][n];
          dot += gw[k][n] * xh[k][n];
          plain += gw[k][n];
          dw[k][n] += go * (kLayer ? xh[k][n] : rounded<X>(xh[k][n]));
          db[k][n] += go;
        }
      }
    }
    const float mean_dot = block_sum(dot) / static_cast<float>(width);
    const float mean_plain = kLayer ? block_sum(plain) / static_cast<float>(width) : 0.0f;
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const std::int64_t j = threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x;
      if (j < packs) {
        const Pack<X> s = grad_sum ? reinterpret_cast<const Pack<X>*>(grad_sum)[at + j] : Pack<X>{};
        const Chunk<std::uint8_t, N> keep =
            drop.keep ? reinterpret_cast<const Chunk<std::uint8_t, N>*>(drop.keep)[at + j] : Chunk<std::uint8_t, N>{};
        Pack<X> o;
        Chunk<D, N> od;
#pragma unroll
        for (int n = 0; n < N; ++n) {
          const float later = grad_sum ? to_float(s.v[n]) : 0.0f;
          o.v[n] = from_float<X>(r * (gw[k][n] - mean_plain - xh[k][n] * mean_dot) + later);
          const float g = to_float(o.v[n]);
          od.v[n] = from_float<D>(drop.keep ? (keep.v[n] ? g * drop.scale : 0.0f) : g);
        }
        reinterpret_cast<Pack<X>*>(grad_x)[at + j] = o;
        if (grad_delta) reinterpret_cast<Chunk<D, N>*>(grad_delta)[at + j] = od;
      }
    }
  }
  const std::int64_t partial = static_cast<std::int64_t>(blockIdx.x) * width;
#pragma unroll
  for (int k = 0; k < P; ++k) {
    const std::int64_t j = threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x;
    if (j < packs)
#pragma unroll
      for (int n = 0; n < N; ++n) {
        weight_partials[partial + j * N + n] = dw[k][n];
        if (kLayer) bias_partials[partial + j * N + n] = db[k][n];
      }
  }
}

template <typename T>
__device__ inline float silu_of(float g) {
  return rounded<T>(g / (1.0f + expf(-g)));
}

template <typename T>
__global__ void silu_mul_forward_kernel(const T* __restrict__ gate, const T* __restrict__ up, T* __restrict__ out,
                                        std::int64_t packs) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < packs; i += stride) {
    const Pack<T> g = reinterpret_cast<const Pack<T>*>(gate)[i], u = reinterpret_cast<const Pack<T>*>(up)[i];
    Pack<T> o;
#pragma unroll
    for (int n = 0; n < Pack<T>::kSize; ++n) o.v[n] = from_float<T>(silu_of<T>(to_float(g.v[n])) * to_float(u.v[n]));
    reinterpret_cast<Pack<T>*>(out)[i] = o;
  }
}

template <typename T>
__global__ void silu_mul_backward_kernel(const T* __restrict__ gate, const T* __restrict__ up,
                                         const T* __restrict__ grad_out, T* __restrict__ grad_gate,
                                         T* __restrict__ grad_up, std::int64_t packs) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < packs; i += stride) {
    const Pack<T> g = reinterpret_cast<const Pack<T>*>(gate)[i], u = reinterpret_cast<const Pack<T>*>(up)[i];
    const Pack<T> d = reinterpret_cast<const Pack<T>*>(grad_out)[i];
    Pack<T> dg, du;
#pragma unroll
    for (int n = 0; n < Pack<T>::kSize; ++n) {
      const float a = to_float(g.v[n]), grad = to_float(d.v[n]);
      const float grad_silu = rounded<T>(grad * to_float(u.v[n]));  // mul's gradient for its first factor
      const float sigmoid = 1.0f / (1.0f + expf(-a));
      dg.v[n] = from_float<T>(grad_silu * sigmoid * (1.0f + a * (1.0f - sigmoid)));
      du.v[n] = from_float<T>(grad * silu_of<T>(a));
    }
    reinterpret_cast<Pack<T>*>(grad_gate)[i] = dg;
    reinterpret_cast<Pack<T>*>(grad_up)[i] = du;
  }
}

// GELU's tanh form and its derivative, in float, as ATen's GeluType::Tanh kernels compute them.
constexpr float kGeluBeta = 0.7978845608028654f;  // √(2 / π)
constexpr float kGeluKappa = 0.044715f;

__device__ inline float gelu_tanh(float x) {
  const float inner = kGeluBeta * (x + kGeluKappa * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}

__device__ inline float gelu_tanh_derivative(float x) {
  const float x_sq = x * x;
  const float t = tanhf(kGeluBeta * (x + kGeluKappa * x_sq * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluBeta * (1.0f + 3.0f * kGeluKappa * x_sq);
}

// GELU's exact form and its derivative, as ATen's GeluType::None kernels compute them.
constexpr float kSqrtHalf = 0.7071067811865476f;      // 1 / √2
constexpr float kGeluErfAlpha = 0.3989422804014327f;  // 1 / √(2π)

__device__ inline float gelu_erf(float x) {
  return 0.5f * x * (1.0f + erff(x * kSqrtHalf));
}

__device__ inline float gelu_erf_derivative(float x) {
  return 0.5f * (1.0f + erff(x * kSqrtHalf)) + x * expf(-0.5f * x * x) * kGeluErfAlpha;
}

template <Gelu kForm>
__device__ inline float gelu(float x) {
  return kForm == Gelu::Tanh ? gelu_tanh(x) : gelu_erf(x);
}

template <Gelu kForm>
__device__ inline float gelu_derivative(float x) {
  return kForm == Gelu::Tanh ? gelu_tanh_derivative(x) : gelu_erf_derivative(x);
}

// The bias + GELU kernels' block: kGeluColumns packs of a row across (a warp reads consecutive
// packs) by kGeluRows rows. A thread keeps one pack's bias (and its gradient's sum) and walks its
// column down the rows, kGeluUnroll rows at a time, a grid's rows apart, so that their loads are
// in flight together; the grid's y dimension spreads the rows over the GPU.
constexpr int kGeluColumns = 32, kGeluRows = 8, kGeluUnroll = 4;

template <typename T, Gelu kForm>
__global__ void __launch_bounds__(kGeluColumns* kGeluRows)
    bias_gelu_forward_kernel(const T* __restrict__ h, const T* __restrict__ bias, T* __restrict__ out,
                             std::int64_t rows, std::int64_t packs) {
  constexpr int N = Pack<T>::kSize;
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kGeluColumns + threadIdx.x;
  if (j >= packs) return;
  const Pack<T> b = reinterpret_cast<const Pack<T>*>(bias)[j];
  const std::int64_t spacing = static_cast<std::int64_t>(gridDim.y) * kGeluRows;
  for (std::int64_t first = static_cast<std::int64_t>(blockIdx.y) * kGeluRows + threadIdx.y; first < rows;
       first += spacing * kGeluUnroll) {
    Pack<T> a[kGeluUnroll];
#pragma unroll
    for (int u = 0; u < kGeluUnroll; ++u)
      if (first + u * spacing < rows) a[u] = reinterpret_cast<const Pack<T>*>(h)[(first + u * spacing) * packs + j];
#pragma unroll
    for (int u = 0; u < kGeluUnroll; ++u) {
      if (first + u * spacing >= rows) break;
      Pack<T> o;
#pragma unroll
      for (int n = 0; n < N; ++n)
        o.v[n] = from_float<T>(gelu<kForm>(rounded<T>(to_float(a[u].v[n]) + to_float(b.v[n]))));
      reinterpret_cast<Pack<T>*>(out)[(first + u * spacing) * packs + j] = o;
    }
  }
}

// As the forward, each thread also summing its column's gradient; a block's kGeluRows sums of a
// column are added in shared memory and written as one row of bias_partials (gridDim.y × width).
template <typename T, Gelu kForm>
__global__ void __launch_bounds__(kGeluColumns* kGeluRows)
    bias_gelu_backward_kernel(const T* __restrict__ h, const T* __restrict__ bias, const T* __restrict__ grad_out,
                              T* __restrict__ grad_pre, float* __restrict__ bias_partials, std::int64_t rows,
                              std::int64_t packs) {
  constexpr int N = Pack<T>::kSize;
  // [row][n][column]: a warp's threads write and read consecutive words.
  __shared__ float sums[kGeluRows][N][kGeluColumns];
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kGeluColumns + threadIdx.x;
  float db[N] = {};
  if (j < packs) {
    const Pack<T> b = reinterpret_cast<const Pack<T>*>(bias)[j];
    const std::int64_t spacing = static_cast<std::int64_t>(gridDim.y) * kGeluRows;
    for (std::int64_t first = static_cast<std::int64_t>(blockIdx.y) * kGeluRows + threadIdx.y; first < rows;
         first += spacing * kGeluUnroll) {
      Pack<T> a[kGeluUnroll], g[kGeluUnroll];
#pragma unroll
      for (int u = 0; u < kGeluUnroll; ++u)
        if (first + u * spacing < rows) {
          a[u] = reinterpret_cast<const Pack<T>*>(h)[(first + u * spacing) * packs + j];
          g[u] = reinterpret_cast<const Pack<T>*>(grad_out)[(first + u * spacing) * packs + j];
        }
#pragma unroll
      for (int u = 0; u < kGeluUnroll; ++u) {
        if (first + u * spacing >= rows) break;
        Pack<T> d;
#pragma unroll
        for (int n = 0; n < N; ++n) {
          const float pre = rounded<T>(to_float(a[u].v[n]) + to_float(b.v[n]));
          d.v[n] = from_float<T>(to_float(g[u].v[n]) * gelu_derivative<kForm>(pre));
          db[n] += to_float(d.v[n]);
        }
        reinterpret_cast<Pack<T>*>(grad_pre)[(first + u * spacing) * packs + j] = d;
      }
    }
  }
#pragma unroll
  for (int n = 0; n < N; ++n) sums[threadIdx.y][n][threadIdx.x] = db[n];
  __syncthreads();
  // The block's kGeluColumns × N columns over its threads: thread t adds column (t mod 32)'s element t / 32.
  for (int t = threadIdx.y * kGeluColumns + threadIdx.x; t < kGeluColumns * N; t += kGeluColumns * kGeluRows) {
    const int n = t / kGeluColumns, column = t % kGeluColumns;
    const std::int64_t pack = static_cast<std::int64_t>(blockIdx.x) * kGeluColumns + column;
    if (pack >= packs) continue;
    float total = 0;
#pragma unroll
    for (int y = 0; y < kGeluRows; ++y) total += sums[y][n][column];
    bias_partials[static_cast<std::int64_t>(blockIdx.y) * packs * N + pack * N + n] = total;
  }
}

// Where head h of token row `row` (batch × tokens + token) of a joined q/k/v lives in q, k or v.
template <typename P>
__device__ P* rotary_head(P* q, P* k, P* v, std::int64_t row, std::int64_t h, const RotaryShape& s) {
  if (h < s.heads) return q + (row * s.heads + h) * s.head_dim;
  if (h < s.heads + s.kv_heads) return k + (row * s.kv_heads + h - s.heads) * s.head_dim;
  return v + (row * s.kv_heads + h - s.heads - s.kv_heads) * s.head_dim;
}

// Rotary positions for training, a thread a pair (i, i + half) of a head's row at a time: forward
// (kForward: qkv into q, k, v) or backward (q's, k's, v's gradients into qkv's). T: qkv's type; C: the
// tables'.
template <typename T, typename C, bool kForward>
__global__ void rotary_kernel(const T* __restrict__ from_qkv, const T* __restrict__ from_q,
                              const T* __restrict__ from_k, const T* __restrict__ from_v, const C* __restrict__ cos,
                              const C* __restrict__ sin, T* __restrict__ to_q, T* __restrict__ to_k,
                              T* __restrict__ to_v, T* __restrict__ to_qkv, RotaryShape s) {
  const std::int64_t half = s.head_dim / 2, stacked = s.heads + 2 * s.kv_heads;
  const std::int64_t total = s.batch * s.tokens * stacked * half;
  for (std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t i = idx % half, h = idx / half % stacked, row = idx / (half * stacked);
    const std::int64_t joined = (row * stacked + h) * s.head_dim;
    const T* src = kForward ? from_qkv + joined : rotary_head(from_q, from_k, from_v, row, h, s);
    T* dst = kForward ? rotary_head(to_q, to_k, to_v, row, h, s) : to_qkv + joined;
    if (h >= s.heads + s.kv_heads) {  // v, and its gradient, as they are
      dst[i] = src[i];
      dst[i + half] = src[i + half];
      continue;
    }
    const std::int64_t b = row / s.tokens,
                       table = ((s.cos_batch == 1 ? 0 : b) * s.tokens + row % s.tokens) * s.head_dim;
    const float c1 = to_float(cos[table + i]), c2 = to_float(cos[table + i + half]);
    const float s1 = to_float(sin[table + i]), s2 = to_float(sin[table + i + half]);
    const float a1 = to_float(src[i]), a2 = to_float(src[i + half]);
    // The products ATen rounds on their own are __fmul_rn, which the compiler does not merge into a
    // multiply-add.
    if (kForward) {
      // ATen's x × cos rounded to the tables' type, then addcmul's multiply-add of roll(x) × sin.
      dst[i] = from_float<T>(fmaf(a2, s1, rounded<C>(__fmul_rn(a1, c1))));
      dst[i + half] = from_float<T>(fmaf(a1, s2, rounded<C>(__fmul_rn(a2, c2))));
    } else {
      // x1 reaches y1 through cos and y2 through the roll (y2 = x2 × c2 + x1 × s2); x2 the other way.
      dst[i] = from_float<T>(rounded<T>(__fmul_rn(a1, c1)) + rounded<T>(__fmul_rn(a2, s2)));
      dst[i + half] = from_float<T>(rounded<T>(__fmul_rn(a2, c2)) + rounded<T>(__fmul_rn(a1, s1)));
    }
  }
}

// Calls f with null pointers of x's and delta's CUDA types: float x with any delta, or both of one
// half type. Returns false for another pair.
template <typename F>
bool for_norm_types(Element x_type, Element delta_type, F&& f) {
  if (x_type == Element::Float) {
    switch (delta_type) {
      case Element::Float:
        f(static_cast<float*>(nullptr), static_cast<float*>(nullptr));
        return true;
      case Element::Half:
        f(static_cast<float*>(nullptr), static_cast<__half*>(nullptr));
        return true;
      case Element::BFloat16:
        f(static_cast<float*>(nullptr), static_cast<__nv_bfloat16*>(nullptr));
        return true;
    }
  }
  if (x_type != delta_type) return false;
  if (x_type == Element::Half)
    f(static_cast<__half*>(nullptr), static_cast<__half*>(nullptr));
  else
    f(static_cast<__nv_bfloat16*>(nullptr), static_cast<__nv_bfloat16*>(nullptr));
  return true;
}

// The norm kernels' threads for a row of `packs` packs, and the packs each thread keeps (1 to kMaxPacks).
int norm_threads(std::int64_t packs) {
  return static_cast<int>(std::min<std::int64_t>(kNormThreads, (packs + 31) / 32 * 32));
}
int packs_per_thread(std::int64_t packs) {
  const std::int64_t need = (packs + kNormThreads - 1) / kNormThreads;
  int p = 1;
  while (p < need) p *= 2;
  return p;
}

// Calls f with std::integral_constant<int, P> for P = packs_per_thread(packs).
template <typename F>
void for_packs(std::int64_t packs, F&& f) {
  switch (packs_per_thread(packs)) {
    case 1:
      f(std::integral_constant<int, 1>{});
      break;
    case 2:
      f(std::integral_constant<int, 2>{});
      break;
    case 4:
      f(std::integral_constant<int, 4>{});
      break;
    default:
      f(std::integral_constant<int, 8>{});
      break;
  }
}

unsigned elementwise_blocks(std::int64_t packs) {
  return static_cast<unsigned>(std::clamp<std::int64_t>((packs + 255) / 256, 1, 1 << 16));
}

}  // namespace

std::int64_t max_rms_norm_width(Element x_type) {
  return static_cast<std::int64_t>(kNormThreads) * kMaxPacks * pack_elements(x_type);
}

namespace {

// The bias + GELU kernels' grid: the row's packs across, about four blocks an SM in all down the rows.
dim3 bias_gelu_grid(std::int64_t rows, std::int64_t packs) {
  const std::int64_t across = (packs + kGeluColumns - 1) / kGeluColumns;
  const std::int64_t wanted = std::max<std::int64_t>(1, 4 * static_cast<std::int64_t>(multiprocessors()) / across);
  const std::int64_t rows_a_pass = static_cast<std::int64_t>(kGeluRows) * kGeluUnroll;
  const std::int64_t down =
      std::clamp<std::int64_t>((rows + rows_a_pass - 1) / rows_a_pass, 1, std::min<std::int64_t>(wanted, 65535));
  return dim3(static_cast<unsigned>(across), static_cast<unsigned>(down));
}

}  // namespace

std::int64_t rms_norm_backward_blocks(std::int64_t rows) {
  return std::max<std::int64_t>(1, std::min<std::int64_t>(rows, 4 * static_cast<std::int64_t>(multiprocessors())));
}

std::int64_t bias_gelu_backward_blocks(Element type, std::int64_t rows, std::int64_t width) {
  return bias_gelu_grid(rows, width / pack_elements(type)).y;
}

namespace {

// Calls f with a null pointer of the output's CUDA type: X's, or D's (for_norm_types' pair). Returns
// false for another type.
template <typename X, typename D, typename F>
bool for_out_type(Element out_type, Element x_type, Element delta_type, F&& f) {
  if (out_type == x_type) {
    f(static_cast<X*>(nullptr));
    return true;
  }
  if (out_type == delta_type) {
    f(static_cast<D*>(nullptr));
    return true;
  }
  return false;
}

template <bool kLayer>
const char* norm_forward(Element x_type, Element delta_type, Element out_type, const void* x, const void* delta,
                         const void* weight, const void* bias, void* sum, void* out, void* out_low, float* mean,
                         float* rstd, std::int64_t rows, std::int64_t width, float eps, const DeltaDropout* dropout,
                         void* stream) {
  if (width > max_rms_norm_width(x_type)) return "the row is wider than max_rms_norm_width";
  if (rows == 0) return nullptr;
  bool out_known = true;
  const bool known = for_norm_types(x_type, delta_type, [&](auto* x_tag, auto* d_tag) {
    using X = std::remove_pointer_t<decltype(x_tag)>;
    using D = std::remove_pointer_t<decltype(d_tag)>;
    const std::int64_t packs = width / Pack<X>::kSize;
    out_known = for_out_type<X, D>(out_type, x_type, delta_type, [&](auto* o_tag) {
      using O = std::remove_pointer_t<decltype(o_tag)>;
      for_packs(packs, [&](auto p) {
        norm_forward_kernel<X, D, O, decltype(p)::value, kLayer>
            <<<static_cast<unsigned>(rows), norm_threads(packs), 0, static_cast<cudaStream_t>(stream)>>>(
                static_cast<const X*>(x), static_cast<const D*>(delta), static_cast<const X*>(weight),
                static_cast<const X*>(bias), static_cast<X*>(sum), static_cast<O*>(out), static_cast<D*>(out_low), mean,
                rstd, width, eps, delta ? dropout_args(dropout) : DropoutArgs{});
      });
    });
  });
  if (!known) return "delta's type must be x's, or x float";
  return out_known ? launch_error() : "out's type must be x's or delta's";
}

template <bool kLayer>
const char* norm_backward(Element x_type, Element delta_type, Element out_type, const void* input, const void* weight,
                          const float* mean, const float* rstd, const void* grad_out, const void* grad_low,
                          const void* grad_sum, void* grad_x, void* grad_delta, float* weight_partials,
                          float* bias_partials, std::int64_t rows, std::int64_t width, const DeltaDropout* dropout,
                          void* stream) {
  if (width > max_rms_norm_width(x_type)) return "the row is wider than max_rms_norm_width";
  if (rows == 0) return nullptr;
  const auto blocks = static_cast<unsigned>(rms_norm_backward_blocks(rows));
  bool out_known = true;
  const bool known = for_norm_types(x_type, delta_type, [&](auto* x_tag, auto* d_tag) {
    using X = std::remove_pointer_t<decltype(x_tag)>;
    using D = std::remove_pointer_t<decltype(d_tag)>;
    const std::int64_t packs = width / Pack<X>::kSize;
    out_known = for_out_type<X, D>(out_type, x_type, delta_type, [&](auto* o_tag) {
      using O = std::remove_pointer_t<decltype(o_tag)>;
      for_packs(packs, [&](auto p) {
        norm_backward_kernel<X, D, O, decltype(p)::value, kLayer>
            <<<blocks, norm_threads(packs), 0, static_cast<cudaStream_t>(stream)>>>(
                static_cast<const X*>(input), static_cast<const X*>(weight), mean, rstd,
                static_cast<const O*>(grad_out), static_cast<const D*>(grad_low), static_cast<const X*>(grad_sum),
                static_cast<X*>(grad_x), static_cast<D*>(grad_delta), weight_partials, bias_partials, rows, width,
                grad_delta ? dropout_args(dropout) : DropoutArgs{});
      });
    });
  });
  if (!known) return "delta's type must be x's, or x float";
  return out_known ? launch_error() : "out's type must be x's or delta's";
}

}  // namespace

const char* rms_norm_forward(Element x_type, Element delta_type, Element out_type, const void* x, const void* delta,
                             const void* weight, void* sum, void* out, float* rstd, std::int64_t rows,
                             std::int64_t width, float eps, const DeltaDropout* dropout, void* stream) {
  return norm_forward<false>(x_type, delta_type, out_type, x, delta, weight, nullptr, sum, out, nullptr, nullptr, rstd,
                             rows, width, eps, dropout, stream);
}

const char* rms_norm_backward(Element x_type, Element delta_type, Element out_type, const void* input,
                              const void* weight, const float* rstd, const void* grad_out, const void* grad_sum,
                              void* grad_x, void* grad_delta, float* weight_partials, std::int64_t rows,
                              std::int64_t width, const DeltaDropout* dropout, void* stream) {
  return norm_backward<false>(x_type, delta_type, out_type, input, weight, nullptr, rstd, grad_out, nullptr, grad_sum,
                              grad_x, grad_delta, weight_partials, nullptr, rows, width, dropout, stream);
}

const char* layer_norm_forward(Element x_type, Element delta_type, Element out_type, const void* x, const void* delta,
                               const void* weight, const void* bias, void* sum, void* out, void* out_low, float* mean,
                               float* rstd, std::int64_t rows, std::int64_t width, float eps,
                               const DeltaDropout* dropout, void* stream) {
  return norm_forward<true>(x_type, delta_type, out_type, x, delta, weight, bias, sum, out, out_low, mean, rstd, rows,
                            width, eps, dropout, stream);
}

const char* layer_norm_backward(Element x_type, Element delta_type, Element out_type, const void* input,
                                const void* weight, const float* mean, const float* rstd, const void* grad_out,
                                const void* grad_low, const void* grad_sum, void* grad_x, void* grad_delta,
                                float* weight_partials, float* bias_partials, std::int64_t rows, std::int64_t width,
                                const DeltaDropout* dropout, void* stream) {
  return norm_backward<true>(x_type, delta_type, out_type, input, weight, mean, rstd, grad_out, grad_low, grad_sum,
                             grad_x, grad_delta, weight_partials, bias_partials, rows, width, dropout, stream);
}

const char* silu_mul_forward(Element type, const void* gate, const void* up, void* out, std::int64_t n, void* stream) {
  if (n == 0) return nullptr;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const std::int64_t packs = n / Pack<T>::kSize;
    silu_mul_forward_kernel<T><<<elementwise_blocks(packs), 256, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T*>(gate), static_cast<const T*>(up), static_cast<T*>(out), packs);
  });
  return launch_error();
}

const char* silu_mul_backward(Element type, const void* gate, const void* up, const void* grad_out, void* grad_gate,
                              void* grad_up, std::int64_t n, void* stream) {
  if (n == 0) return nullptr;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const std::int64_t packs = n / Pack<T>::kSize;
    silu_mul_backward_kernel<T><<<elementwise_blocks(packs), 256, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T*>(gate), static_cast<const T*>(up), static_cast<const T*>(grad_out),
        static_cast<T*>(grad_gate), static_cast<T*>(grad_up), packs);
  });
  return launch_error();
}

const char* bias_gelu_forward(Element type, const void* h, const void* bias, void* out, std::int64_t rows,
                              std::int64_t width, Gelu form, void* stream) {
  if (rows == 0) return nullptr;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const std::int64_t packs = width / Pack<T>::kSize;
    const auto launch = [&](auto kernel) {
      kernel<<<bias_gelu_grid(rows, packs), dim3(kGeluColumns, kGeluRows), 0, static_cast<cudaStream_t>(stream)>>>(
          static_cast<const T*>(h), static_cast<const T*>(bias), static_cast<T*>(out), rows, packs);
    };
    if (form == Gelu::Tanh)
      launch(bias_gelu_forward_kernel<T, Gelu::Tanh>);
    else
      launch(bias_gelu_forward_kernel<T, Gelu::Erf>);
  });
  return launch_error();
}

const char* bias_gelu_backward(Element type, const void* h, const void* bias, const void* grad_out, void* grad_pre,
                               float* bias_partials, std::int64_t rows, std::int64_t width, Gelu form, void* stream) {
  if (rows == 0) return nullptr;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const std::int64_t packs = width / Pack<T>::kSize;
    const auto launch = [&](auto kernel) {
      kernel<<<bias_gelu_grid(rows, packs), dim3(kGeluColumns, kGeluRows), 0, static_cast<cudaStream_t>(stream)>>>(
          static_cast<const T*>(h), static_cast<const T*>(bias), static_cast<const T*>(grad_out),
          static_cast<T*>(grad_pre), bias_partials, rows, packs);
    };
    if (form == Gelu::Tanh)
      launch(bias_gelu_backward_kernel<T, Gelu::Tanh>);
    else
      launch(bias_gelu_backward_kernel<T, Gelu::Erf>);
  });
  return launch_error();
}

namespace {

// The rotary kernel over all (batch, token, head, pair) of the shape, for qkv's type and the tables'.
template <bool kForward>
const char* launch_rotary(Element type, Element table_type, const RotaryShape& shape, const void* from_qkv,
                          const void* from_q, const void* from_k, const void* from_v, const void* cos,
                          const void* sin_signed, void* to_q, void* to_k, void* to_v, void* to_qkv, void* stream) {
  if (shape.head_dim % 2 != 0) return "rotary positions need an even head_dim";
  const std::int64_t pairs = shape.batch * shape.tokens * (shape.heads + 2 * shape.kv_heads) * (shape.head_dim / 2);
  if (pairs == 0) return nullptr;
  constexpr int kThreads = 256;
  const auto blocks = static_cast<unsigned>(std::clamp<std::int64_t>((pairs + kThreads - 1) / kThreads, 1, 1 << 20));
  // for_norm_types' pairs with the tables first: float tables with any qkv, or both of one half type.
  const bool known = for_norm_types(table_type, type, [&](auto* c_tag, auto* t_tag) {
    using C = std::remove_pointer_t<decltype(c_tag)>;
    using T = std::remove_pointer_t<decltype(t_tag)>;
    rotary_kernel<T, C, kForward><<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T*>(from_qkv), static_cast<const T*>(from_q), static_cast<const T*>(from_k),
        static_cast<const T*>(from_v), static_cast<const C*>(cos), static_cast<const C*>(sin_signed),
        static_cast<T*>(to_q), static_cast<T*>(to_k), static_cast<T*>(to_v), static_cast<T*>(to_qkv), shape);
  });
  if (!known) return "the rotary tables' type must be qkv's, or float";
  return launch_error();
}

}  // namespace

const char* rotary_forward(Element type, Element table_type, const RotaryShape& shape, const void* qkv, const void* cos,
                           const void* sin_signed, void* q, void* k, void* v, void* stream) {
  return launch_rotary<true>(type, table_type, shape, qkv, nullptr, nullptr, nullptr, cos, sin_signed, q, k, v, nullptr,
                             stream);
}

const char* rotary_backward(Element type, Element table_type, const RotaryShape& shape, const void* grad_q,
                            const void* grad_k, const void* grad_v, const void* cos, const void* sin_signed,
                            void* grad_qkv, void* stream) {
  return launch_rotary<false>(type, table_type, shape, nullptr, grad_q, grad_k, grad_v, cos, sin_signed, nullptr,
                              nullptr, nullptr, grad_qkv, stream);
}

}  // namespace xpuperf::nvidia::kernels
