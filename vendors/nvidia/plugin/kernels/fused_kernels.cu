#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/element.cuh"
#include "kernels/fused_kernels.h"

namespace xpuperf::nvidia::kernels {
namespace {

// The first pass of the add-and-norm kernels: block blockIdx.x's row of x (+ delta, the sum
// rounded as ATen's add leaves it and written to `sum`) into shared memory, and the thread's part of
// the sum of stat(element) over the row.
template <typename T, typename Stat>
__device__ float stage_added_row(const T* __restrict__ x, const T* __restrict__ delta, T* __restrict__ sum,
                                 Pack<T>* row, std::int64_t packs, Stat stat) {
  const std::int64_t at = static_cast<std::int64_t>(blockIdx.x) * packs;
  const auto* xs = reinterpret_cast<const Pack<T>*>(x) + at;
  float partial = 0;
  for (std::int64_t j = threadIdx.x; j < packs; j += blockDim.x) {
    Pack<T> a = xs[j];
    if (delta) {
      const Pack<T> d = reinterpret_cast<const Pack<T>*>(delta)[at + j];
#pragma unroll
      for (int n = 0; n < Pack<T>::kSize; ++n) a.v[n] = from_float<T>(to_float(a.v[n]) + to_float(d.v[n]));
      reinterpret_cast<Pack<T>*>(sum)[at + j] = a;
    }
#pragma unroll
    for (int n = 0; n < Pack<T>::kSize; ++n) partial += stat(to_float(a.v[n]));
    row[j] = a;
  }
  return partial;
}

// One row a block; the row's sum is kept in shared memory between the two passes.
template <typename T>
__global__ void add_rms_norm_kernel(const T* __restrict__ x, const T* __restrict__ delta, const T* __restrict__ weight,
                                    T* __restrict__ sum, T* __restrict__ out, std::int64_t width, float eps) {
  await_previous_kernel();
  extern __shared__ __align__(16) unsigned char row_bytes[];
  auto* row = reinterpret_cast<Pack<T>*>(row_bytes);
  const std::int64_t packs = width / Pack<T>::kSize;
  const float squares = stage_added_row(x, delta, sum, row, packs, [](float v) { return v * v; });
  const float scale = rsqrtf(block_sum(squares) / static_cast<float>(width) + eps);
  const auto* ws = reinterpret_cast<const Pack<T>*>(weight);
  auto* outs = reinterpret_cast<Pack<T>*>(out) + static_cast<std::int64_t>(blockIdx.x) * packs;
  for (std::int64_t j = threadIdx.x; j < packs; j += blockDim.x) {
    const Pack<T> a = row[j], w = ws[j];
    Pack<T> o;
#pragma unroll
    for (int n = 0; n < Pack<T>::kSize; ++n)
      o.v[n] = from_float<T>(to_float(w.v[n]) * rounded<T>(to_float(a.v[n]) * scale));
    outs[j] = o;
  }
}

// One row a block, kept in shared memory for the mean, the variance and the output passes.
template <typename T>
__global__ void add_layer_norm_kernel(const T* __restrict__ x, const T* __restrict__ delta,
                                      const T* __restrict__ weight, const T* __restrict__ bias, T* __restrict__ sum,
                                      T* __restrict__ out, std::int64_t width, float eps) {
  await_previous_kernel();
  extern __shared__ __align__(16) unsigned char row_bytes[];
  auto* row = reinterpret_cast<Pack<T>*>(row_bytes);
  const std::int64_t packs = width / Pack<T>::kSize;
  const float total = stage_added_row(x, delta, sum, row, packs, [](float v) { return v; });
  const float mean = block_sum(total) / static_cast<float>(width);
  float squares = 0;
  for (std::int64_t j = threadIdx.x; j < packs; j += blockDim.x) {
    const Pack<T> a = row[j];
#pragma unroll
    for (int n = 0; n < Pack<T>::kSize; ++n) {
      const float c = to_float(a.v[n]) - mean;
      squares += c * c;
    }
  }
  const float scale = rsqrtf(block_sum(squares) / static_cast<float>(width) + eps);
  const auto* ws = reinterpret_cast<const Pack<T>*>(weight);
  const auto* bs = reinterpret_cast<const Pack<T>*>(bias);
  auto* outs = reinterpret_cast<Pack<T>*>(out) + static_cast<std::int64_t>(blockIdx.x) * packs;
  for (std::int64_t j = threadIdx.x; j < packs; j += blockDim.x) {
    const Pack<T> a = row[j], w = ws[j], b = bs[j];
    Pack<T> o;
#pragma unroll
    for (int n = 0; n < Pack<T>::kSize; ++n)
      o.v[n] = from_float<T>((to_float(a.v[n]) - mean) * scale * to_float(w.v[n]) + to_float(b.v[n]));
    outs[j] = o;
  }
}

template <typename T>
__global__ void silu_mul_kernel(const T* __restrict__ gate_up, T* __restrict__ out, std::int64_t rows,
                                std::int64_t width) {
  await_previous_kernel();
  const std::int64_t packs = width / Pack<T>::kSize, total = rows * packs;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const std::int64_t r = i / packs, j = i % packs;
    const auto* row = reinterpret_cast<const Pack<T>*>(gate_up) + r * 2 * packs;
    const Pack<T> g = row[j], u = row[packs + j];
    Pack<T> o;
#pragma unroll
    for (int n = 0; n < Pack<T>::kSize; ++n) {
      const float a = to_float(g.v[n]);
      o.v[n] = from_float<T>(rounded<T>(a / (1.0f + expf(-a))) * to_float(u.v[n]));
    }
    reinterpret_cast<Pack<T>*>(out)[i] = o;
  }
}

// Where rotary positions put the pair (i, i + half) of stacked head h of row b's token t, given the
// projection's values x1, x2 there: v into the cache as it is; q and k rotated (ATen's form: x × cos
// rounded, then addcmul, one rounding of x × cos + roll(x) × sin), q to a.q, k into the cache and to
// a.k where given.
template <typename T>
__device__ inline void store_rotated_pair(const RotaryQkv& a, std::int64_t b, std::int64_t t, std::int64_t h,
                                          std::int64_t i, T x1, T x2) {
  const std::int64_t half = a.head_dim / 2;
  std::int64_t cached = -1;  // the element offset of this token's row in a cache layer
  if (a.k_cache) {
    const std::int64_t pos = a.positions[b * a.positions_row_stride + t];
    if (pos >= 0 && pos < a.max_tokens) cached = (a.slots[b] * a.max_tokens + pos) * a.kv_heads;
  }
  const auto put = [&](T* dst, T first, T second) {
    dst[i] = first;
    dst[i + half] = second;
  };
  if (h >= a.heads + a.kv_heads) {  // v
    if (cached >= 0) put(static_cast<T*>(a.v_cache) + (cached + h - a.heads - a.kv_heads) * a.head_dim, x1, x2);
    return;
  }
  const std::int64_t table = ((a.cos_batch == 1 ? 0 : b) * a.tokens + t) * a.head_dim;
  const T* cos = static_cast<const T*>(a.cos) + table;
  const T* sin = static_cast<const T*>(a.sin_signed) + table;
  const T y1 = from_float<T>(rounded<T>(to_float(x1) * to_float(cos[i])) + to_float(x2) * to_float(sin[i]));
  const T y2 =
      from_float<T>(rounded<T>(to_float(x2) * to_float(cos[i + half])) + to_float(x1) * to_float(sin[i + half]));
  if (h < a.heads) {
    put(static_cast<T*>(a.q) + ((b * a.tokens + t) * a.heads + h) * a.head_dim, y1, y2);
    return;
  }
  const std::int64_t kh = h - a.heads;
  if (cached >= 0) put(static_cast<T*>(a.k_cache) + (cached + kh) * a.head_dim, y1, y2);
  if (a.k) put(static_cast<T*>(a.k) + ((b * a.tokens + t) * a.kv_heads + kh) * a.head_dim, y1, y2);
}

// One thread a pair (i, i + half) of one head of one token.
template <typename T>
__global__ void rotary_qkv_kernel(RotaryQkv a) {
  await_previous_kernel();
  const std::int64_t half = a.head_dim / 2, stacked = a.heads + 2 * a.kv_heads;
  const std::int64_t total = a.batch * a.tokens * stacked * half;
  const std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= total) return;
  const std::int64_t i = idx % half, h = idx / half % stacked, t = idx / (half * stacked) % a.tokens;
  const std::int64_t b = idx / (half * stacked * a.tokens);
  const T* src = static_cast<const T*>(a.qkv) + ((b * a.tokens + t) * stacked + h) * a.head_dim;
  store_rotated_pair(a, b, t, h, i, src[i], src[i + half]);
}

// A warp's dot products of kParts weight rows w with each of the Rows input rows xs: lanes take 16-byte
// packs kUnroll at a time (the loads issued before the arithmetic, so enough bytes are in flight to
// keep the memory busy), each input row's pack read through L1 (every warp of the block reads the same
// x), then the lanes' sums are added by shuffles: every lane gets the totals.
// The first kUnroll packs of each weight row are loaded before await_previous_kernel(), which this
// calls: a weight is no kernel's output, so under programmatic dependent launch its stream starts
// while the kernel before finishes, and the GEMV's ramp overlaps that kernel's tail. Only x waits.
// (So a GEMV's weight must not be written by the kernel launched just before it.)
template <typename T, int Rows, int kParts>
__device__ void warp_dot_rows(const uint4* const (&w)[kParts], const Pack<T>* xs, std::int64_t packs,
                              float (&total)[kParts][Rows]) {
  constexpr int kUnroll = 4;
  const int lane = threadIdx.x % 32;
  float sum[kParts][Rows] = {};
  const auto accumulate = [&](int p, const uint4& bits, std::int64_t j) {
    Pack<T> a;
    *reinterpret_cast<uint4*>(&a) = bits;
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      const Pack<T> b = xs[r * packs + j];
#pragma unroll
      for (int e = 0; e < Pack<T>::kSize; ++e) sum[p][r] += to_float(a.v[e]) * to_float(b.v[e]);
    }
  };
  uint4 bits[kParts][kUnroll];
  const auto load = [&](std::int64_t at) {
#pragma unroll
    for (int p = 0; p < kParts; ++p)
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) bits[p][u] = __ldcs(w[p] + at + 32 * u);  // streamed: read once a step
  };
  std::int64_t j = lane;
  const bool whole_rounds = j + 32 * (kUnroll - 1) < packs;
  if (whole_rounds) load(j);
  await_previous_kernel();
  if (whole_rounds) {
    for (;;) {
#pragma unroll
      for (int p = 0; p < kParts; ++p)
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) accumulate(p, bits[p][u], j + 32 * u);
      j += 32 * kUnroll;
      if (j + 32 * (kUnroll - 1) >= packs) break;
      load(j);
    }
  }
  for (; j < packs; j += 32)
#pragma unroll
    for (int p = 0; p < kParts; ++p) accumulate(p, __ldcs(w[p] + j), j);
#pragma unroll
  for (int p = 0; p < kParts; ++p)
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      float v = sum[p][r];
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      total[p][r] = v;
    }
}

// One warp an output row. kSiluMul: the weight holds n gate rows then n up rows; a warp streams output
// `row`'s gate and up rows together and writes SiLU(gate) × up, rounded as the GEMV's two outputs and
// silu_mul_kernel would round them (one kernel and one round trip of gate_up fewer).
template <typename T, int Rows, bool kSiluMul>
__global__ void gemv_kernel(const T* __restrict__ x, const T* __restrict__ weight, T* __restrict__ y, std::int64_t n,
                            std::int64_t k) {
  constexpr int kParts = kSiluMul ? 2 : 1;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= n) return;
  const uint4* w[kParts];
#pragma unroll
  for (int p = 0; p < kParts; ++p) w[p] = reinterpret_cast<const uint4*>(weight + (row + p * n) * k);
  float total[kParts][Rows];
  warp_dot_rows<T, Rows, kParts>(w, reinterpret_cast<const Pack<T>*>(x), k / Pack<T>::kSize, total);
  if (threadIdx.x % 32 != 0) return;
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
    if constexpr (kSiluMul) {
      const float gate = rounded<T>(total[0][r]), up = rounded<T>(total[1][r]);
      y[r * n + row] = from_float<T>(rounded<T>(gate / (1.0f + expf(-gate))) * up);
    } else {
      y[r * n + row] = from_float<T>(total[0][r]);
    }
  }
}

// The q/k/v GEMV of a decoding step with rotary_qkv_kernel after it: one warp the pair (i, i + half)
// of one head, its two weight rows streamed together; the outputs rounded as the GEMV would write
// them, then rotated (q and k) and written where rotary_qkv_kernel writes them: q, and k and v into
// the step's cache slots. Input row r is batch r / tokens, token r % tokens.
template <typename T, int Rows>
__global__ void gemv_rotary_qkv_kernel(const T* __restrict__ x, const T* __restrict__ weight, RotaryQkv a,
                                       std::int64_t k) {
  const std::int64_t half = a.head_dim / 2, stacked = a.heads + 2 * a.kv_heads;
  const std::int64_t pair = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (pair >= stacked * half) return;
  const std::int64_t h = pair / half, i = pair % half;
  const uint4* w[2] = {reinterpret_cast<const uint4*>(weight + (h * a.head_dim + i) * k),
                       reinterpret_cast<const uint4*>(weight + (h * a.head_dim + i + half) * k)};
  float total[2][Rows];
  warp_dot_rows<T, Rows, 2>(w, reinterpret_cast<const Pack<T>*>(x), k / Pack<T>::kSize, total);
  if (threadIdx.x % 32 != 0) return;
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
    store_rotated_pair(a, r / a.tokens, r % a.tokens, h, i, from_float<T>(total[0][r]), from_float<T>(total[1][r]));
  }
}

constexpr std::int64_t kIgnoredTarget = -100;

// (maximum, sum of exp(x − maximum)) of two parts of a row, as one.
__device__ inline void merge_softmax_sums(float& m, float& s, float m2, float s2) {
  const float top = fmaxf(m, m2);
  if (top == -INFINITY) return;  // both empty (or all −inf so far)
  s = s * expf(m - top) + s2 * expf(m2 - top);
  m = top;
}

template <typename T>
__global__ void cross_entropy_forward_kernel(const T* __restrict__ logits, const std::int64_t* __restrict__ targets,
                                             float* __restrict__ lse, float* __restrict__ losses, std::int64_t vocab) {
  const std::int64_t row = blockIdx.x, packs = vocab / Pack<T>::kSize;
  const auto* xs = reinterpret_cast<const Pack<T>*>(logits) + row * packs;
  float m = -INFINITY, s = 0;
  for (std::int64_t j = threadIdx.x; j < packs; j += blockDim.x) {
    const Pack<T> a = xs[j];
    float top = -INFINITY;
#pragma unroll
    for (int n = 0; n < Pack<T>::kSize; ++n) top = fmaxf(top, to_float(a.v[n]));
    float part = 0;
    if (top != -INFINITY) {
#pragma unroll
      for (int n = 0; n < Pack<T>::kSize; ++n) part += expf(to_float(a.v[n]) - top);
    }
    merge_softmax_sums(m, s, top, part);
  }
  for (int o = 16; o > 0; o >>= 1)
    merge_softmax_sums(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  __shared__ float warp_m[32], warp_s[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    warp_m[warp] = m;
    warp_s[warp] = s;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) merge_softmax_sums(m, s, warp_m[w], warp_s[w]);
  const float row_lse = m + logf(s);
  lse[row] = row_lse;
  const std::int64_t t = targets[row];
  if (t == kIgnoredTarget)
    losses[row] = 0;
  else if (t < 0 || t >= vocab)
    losses[row] = NAN;
  else
    losses[row] = row_lse - to_float(logits[row * vocab + t]);
}

// logits and grad may be one buffer: a thread reads each pack before it writes the same pack.
template <typename T>
__global__ void cross_entropy_backward_kernel(const T* logits, const std::int64_t* __restrict__ targets,
                                              const float* __restrict__ lse, const float* __restrict__ scale, T* grad,
                                              std::int64_t vocab) {
  const std::int64_t row = blockIdx.x, packs = vocab / Pack<T>::kSize;
  const auto* xs = reinterpret_cast<const Pack<T>*>(logits) + row * packs;
  auto* gs = reinterpret_cast<Pack<T>*>(grad) + row * packs;
  const std::int64_t t = targets[row];
  const bool ignored = t == kIgnoredTarget;
  const float row_lse = lse[row], g = scale[0];
  for (std::int64_t j = threadIdx.x; j < packs; j += blockDim.x) {
    const Pack<T> a = xs[j];
    Pack<T> o;
#pragma unroll
    for (int n = 0; n < Pack<T>::kSize; ++n) {
      const std::int64_t column = j * Pack<T>::kSize + n;
      const float p = expf(to_float(a.v[n]) - row_lse) - (column == t ? 1.0f : 0.0f);
      o.v[n] = from_float<T>(ignored ? 0.0f : p * g);
    }
    gs[j] = o;
  }
}

unsigned blocks_for(std::int64_t threads_needed, int block) {
  return static_cast<unsigned>(std::max<std::int64_t>(1, (threads_needed + block - 1) / block));
}

// A row-a-block kernel's threads: enough for a pack each up to 512, in whole warps.
template <typename T>
int row_threads(std::int64_t width) {
  const std::int64_t packs = width / Pack<T>::kSize;
  return static_cast<int>(std::min<std::int64_t>(512, (packs + 31) / 32 * 32));
}

template <typename T>
void launch_add_rms_norm(const void* x, const void* delta, const void* weight, void* sum, void* out, std::int64_t rows,
                         std::int64_t width, float eps, cudaStream_t stream) {
  const int threads = row_threads<T>(width);
  const std::size_t shared = static_cast<std::size_t>(width) * sizeof(T);
  launch_overlapping(add_rms_norm_kernel<T>, static_cast<unsigned>(rows), threads, shared, stream,
                     static_cast<const T*>(x), static_cast<const T*>(delta), static_cast<const T*>(weight),
                     static_cast<T*>(sum), static_cast<T*>(out), width, eps);
}

template <typename T>
void launch_add_layer_norm(const void* x, const void* delta, const void* weight, const void* bias, void* sum, void* out,
                           std::int64_t rows, std::int64_t width, float eps, cudaStream_t stream) {
  const int threads = row_threads<T>(width);
  const std::size_t shared = static_cast<std::size_t>(width) * sizeof(T);
  launch_overlapping(add_layer_norm_kernel<T>, static_cast<unsigned>(rows), threads, shared, stream,
                     static_cast<const T*>(x), static_cast<const T*>(delta), static_cast<const T*>(weight),
                     static_cast<const T*>(bias), static_cast<T*>(sum), static_cast<T*>(out), width, eps);
}

template <typename T>
void launch_silu_mul(const void* gate_up, void* out, std::int64_t rows, std::int64_t width, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const std::int64_t packs = rows * (width / Pack<T>::kSize);
  const unsigned blocks = std::min<unsigned>(blocks_for(packs, kThreads), 1u << 20);
  launch_overlapping(silu_mul_kernel<T>, blocks, kThreads, 0, stream, static_cast<const T*>(gate_up),
                     static_cast<T*>(out), rows, width);
}

template <typename T>
void launch_rotary_qkv(const RotaryQkv& a, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const std::int64_t pairs = a.batch * a.tokens * (a.heads + 2 * a.kv_heads) * (a.head_dim / 2);
  launch_overlapping(rotary_qkv_kernel<T>, blocks_for(pairs, kThreads), kThreads, 0, stream, a);
}

// f(std::integral_constant<int, rows>) for the GEMVs' 1 to kMaxGemvRows input rows (their kernels take
// the row count as a template argument).
template <typename F>
void for_gemv_rows(std::int64_t rows, F&& f) {
  static_assert(kMaxGemvRows == 4, "for_gemv_rows names each row count");
  switch (rows) {
    case 1:
      f(std::integral_constant<int, 1>{});
      break;
    case 2:
      f(std::integral_constant<int, 2>{});
      break;
    case 3:
      f(std::integral_constant<int, 3>{});
      break;
    default:
      f(std::integral_constant<int, 4>{});
      break;
  }
}

template <typename T, bool kSiluMul>
void launch_gemv(const void* x, const void* weight, void* y, std::int64_t rows, std::int64_t n, std::int64_t k,
                 cudaStream_t stream) {
  constexpr int kThreads = 128;  // 4 output rows a block
  const unsigned blocks = blocks_for(n * 32, kThreads);
  const auto* xs = static_cast<const T*>(x);
  const auto* w = static_cast<const T*>(weight);
  auto* ys = static_cast<T*>(y);
  for_gemv_rows(rows, [&](auto r) {
    launch_overlapping(gemv_kernel<T, decltype(r)::value, kSiluMul>, blocks, kThreads, 0, stream, xs, w, ys, n, k);
  });
}

constexpr int kCrossEntropyThreads = 512;  // one row a block

// Whether (v, i) comes before (best, at) in ATen's argmax order: a NaN first, then the larger value,
// then the smaller index. at = INT64_MAX: no element yet.
__device__ inline bool argmax_before(float v, std::int64_t i, float best, std::int64_t at) {
  if (isnan(v)) return !isnan(best) || i < at;
  if (isnan(best)) return false;
  return v > best || (v == best && i < at);
}

// One row a block: the elements before the first 16-byte boundary one a thread, then whole packs,
// then the rest; each thread's best, then the warps', then the block's.
template <typename T>
__global__ void argmax_rows_kernel(const T* __restrict__ x, std::int64_t* __restrict__ out, std::int64_t width) {
  const T* row = x + static_cast<std::int64_t>(blockIdx.x) * width;
  float best = -INFINITY;
  std::int64_t at = INT64_MAX;
  const auto take = [&](float v, std::int64_t i) {
    if (argmax_before(v, i, best, at)) {
      best = v;
      at = i;
    }
  };
  const auto misaligned = reinterpret_cast<std::uintptr_t>(row) % 16;
  const std::int64_t to_boundary = misaligned == 0 ? 0 : static_cast<std::int64_t>((16 - misaligned) / sizeof(T));
  const std::int64_t head = to_boundary < width ? to_boundary : width;
  for (std::int64_t j = threadIdx.x; j < head; j += blockDim.x) take(to_float(row[j]), j);
  const std::int64_t packs = (width - head) / Pack<T>::kSize;
  const auto* ps = reinterpret_cast<const Pack<T>*>(row + head);
#pragma unroll 4
  for (std::int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack<T> a = ps[p];
#pragma unroll
    for (int k = 0; k < Pack<T>::kSize; ++k) take(to_float(a.v[k]), head + p * Pack<T>::kSize + k);
  }
  for (std::int64_t j = head + packs * Pack<T>::kSize + threadIdx.x; j < width; j += blockDim.x)
    take(to_float(row[j]), j);
  for (int o = 16; o > 0; o >>= 1) {
    const float v = __shfl_xor_sync(0xffffffffu, best, o);
    const auto i = static_cast<std::int64_t>(__shfl_xor_sync(0xffffffffu, static_cast<long long>(at), o));
    take(v, i);
  }
  __shared__ float warp_best[32];
  __shared__ std::int64_t warp_at[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    warp_best[warp] = best;
    warp_at[warp] = at;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) take(warp_best[w], warp_at[w]);
    out[blockIdx.x] = at;
  }
}

}  // namespace

const char* add_rms_norm(Element type, const void* x, const void* delta, const void* weight, void* sum, void* out,
                         std::int64_t rows, std::int64_t width, float eps, void* stream) {
  if (rows == 0) return nullptr;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    launch_add_rms_norm<T>(x, delta, weight, sum, out, rows, width, eps, static_cast<cudaStream_t>(stream));
  });
  return launch_error();
}

const char* add_layer_norm(Element type, const void* x, const void* delta, const void* weight, const void* bias,
                           void* sum, void* out, std::int64_t rows, std::int64_t width, float eps, void* stream) {
  if (rows == 0) return nullptr;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    launch_add_layer_norm<T>(x, delta, weight, bias, sum, out, rows, width, eps, static_cast<cudaStream_t>(stream));
  });
  return launch_error();
}

const char* silu_mul(Element type, const void* gate_up, void* out, std::int64_t rows, std::int64_t width,
                     void* stream) {
  if (rows == 0 || width == 0) return nullptr;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    launch_silu_mul<T>(gate_up, out, rows, width, static_cast<cudaStream_t>(stream));
  });
  return launch_error();
}

const char* rotary_qkv(Element type, const RotaryQkv& args, void* stream) {
  if (args.batch * args.tokens == 0) return nullptr;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    launch_rotary_qkv<T>(args, static_cast<cudaStream_t>(stream));
  });
  return launch_error();
}

const char* gemv(Element type, const void* x, const void* weight, void* y, std::int64_t rows, std::int64_t n,
                 std::int64_t k, void* stream) {
  if (rows < 1 || rows > kMaxGemvRows) return "gemv takes 1 to kMaxGemvRows input rows";
  if (n == 0) return nullptr;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    launch_gemv<T, false>(x, weight, y, rows, n, k, static_cast<cudaStream_t>(stream));
  });
  return launch_error();
}

const char* gemv_rotary_qkv(Element type, const void* x, const void* qkv_weight, const RotaryQkv& args, std::int64_t k,
                            void* stream) {
  const std::int64_t rows = args.batch * args.tokens;
  if (rows < 1 || rows > kMaxGemvRows) return "gemv_rotary_qkv takes 1 to kMaxGemvRows input rows";
  if (args.k != nullptr) return "gemv_rotary_qkv writes k into the cache only";
  const std::int64_t pairs = (args.heads + 2 * args.kv_heads) * (args.head_dim / 2);
  if (pairs == 0) return nullptr;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    constexpr int kThreads = 128;  // 4 pairs a block
    const unsigned blocks = blocks_for(pairs * 32, kThreads);
    const auto* xs = static_cast<const T*>(x);
    const auto* w = static_cast<const T*>(qkv_weight);
    const auto s = static_cast<cudaStream_t>(stream);
    for_gemv_rows(rows, [&](auto r) {
      launch_overlapping(gemv_rotary_qkv_kernel<T, decltype(r)::value>, blocks, kThreads, 0, s, xs, w, args, k);
    });
  });
  return launch_error();
}

const char* gemv_silu_mul(Element type, const void* x, const void* gate_up_weight, void* y, std::int64_t rows,
                          std::int64_t units, std::int64_t k, void* stream) {
  if (rows < 1 || rows > kMaxGemvRows) return "gemv_silu_mul takes 1 to kMaxGemvRows input rows";
  if (units == 0) return nullptr;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    launch_gemv<T, true>(x, gate_up_weight, y, rows, units, k, static_cast<cudaStream_t>(stream));
  });
  return launch_error();
}

const char* cross_entropy_forward(Element type, const void* logits, const std::int64_t* targets, float* lse,
                                  float* losses, std::int64_t rows, std::int64_t vocab, void* stream) {
  if (rows == 0) return nullptr;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    cross_entropy_forward_kernel<T>
        <<<static_cast<unsigned>(rows), kCrossEntropyThreads, 0, static_cast<cudaStream_t>(stream)>>>(
            static_cast<const T*>(logits), targets, lse, losses, vocab);
  });
  return launch_error();
}

const char* cross_entropy_backward(Element type, const void* logits, const std::int64_t* targets, const float* lse,
                                   const float* scale, void* grad, std::int64_t rows, std::int64_t vocab,
                                   void* stream) {
  if (rows == 0) return nullptr;
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    cross_entropy_backward_kernel<T>
        <<<static_cast<unsigned>(rows), kCrossEntropyThreads, 0, static_cast<cudaStream_t>(stream)>>>(
            static_cast<const T*>(logits), targets, lse, scale, static_cast<T*>(grad), vocab);
  });
  return launch_error();
}

const char* argmax_rows(Element type, const void* x, std::int64_t* out, std::int64_t rows, std::int64_t width,
                        void* stream) {
  if (rows == 0) return nullptr;
  if (width == 0) return "argmax over rows of no element";
  if (rows > 0x7fffffff) return "argmax_rows takes at most 2^31 - 1 rows";
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    argmax_rows_kernel<T><<<static_cast<unsigned>(rows), 256, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T*>(x), out, width);
  });
  return launch_error();
}

}  // namespace xpuperf::nvidia::kernels
