// A decoding step's attention over the KV cache, split over the keys (fused_kernels.h: decode_attention).

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/element.cuh"
#include "kernels/fused_kernels.h"

namespace xpuperf::nvidia::kernels {
namespace {

constexpr int kWarps = 4;
constexpr int kRounds = 8;                     // key groups a warp loads before it computes
constexpr float kLog2e = 1.4426950408889634f;  // exponentials as exp2 of scores scaled by log2(e)

// A key (and a value) is a row of L 16-byte packs, read by L neighbouring lanes, so a warp reads
// 32 / L whole rows a load: a group. Each warp loads kRounds groups of keys and of values (8 × 16
// bytes of each a lane in flight) before it computes, with no branch between the loads.
template <typename T, int L>
constexpr int kChunk = kWarps* kRounds*(32 / L);  // keys a block

// The keys row b's token t sees.
__device__ inline std::int64_t keys_seen(const DecodeAttention& a, std::int64_t b, std::int64_t t) {
  const std::int64_t position = a.positions[b * a.positions_row_stride + t];
  return std::max<std::int64_t>(0, std::min(position + 1, a.visible));
}

// The cache row (slot × max_tokens + position, or block × block_size + place) of row b's key j.
__device__ inline std::int64_t key_row(const DecodeAttention& a, std::int64_t b, std::int64_t j) {
  if (!a.block_table) return b * a.max_tokens + j;
  return a.block_table[b * a.block_table_stride + j / a.block_size] * a.block_size + j % a.block_size;
}

// Block (x, chunk) takes `group` query heads that share one key/value head (grouped-query
// attention): query rows (b, t, h) for h = (x mod heads / group) × group + g, g < group; keys first
// .. first + kChunk − 1. Round r of warp w reads group r × kWarps + w of the chunk (the block reads the
// chunk's rows in order) once, into registers, and every head of the block scores them: the cache is
// read once a key/value head, not once a query head. A key past the row's last is read as the last
// (no branch) and its score dropped. One chunk in all (gridDim.y 1): the outputs themselves; else
// each chunk's (maximum, sum, weighted values) to partial.
template <typename T, int L>
__global__ void __launch_bounds__(kWarps * 32) decode_attention_chunk_kernel(DecodeAttention a, int group) {
  await_previous_kernel();
  constexpr int kGroup = 32 / L, kSize = Pack<T>::kSize;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, sub = lane / L, part = lane % L;
  const std::int64_t sets = a.heads / group;  // blocks a query row's heads take
  const std::int64_t bt = blockIdx.x / sets, first_head = (blockIdx.x % sets) * group;
  const std::int64_t b = bt / a.tokens, t = bt % a.tokens;
  const std::int64_t length = keys_seen(a, b, t), first = static_cast<std::int64_t>(blockIdx.y) * kChunk<T, L>;
  const bool whole = gridDim.y == 1;
  if (first >= length) {
    if (whole)  // no key at all: zeros
      for (int d = threadIdx.x; d < group * L * kSize; d += blockDim.x)
        static_cast<T*>(a.out)[(bt * a.heads + first_head) * L * kSize + d] = from_float<T>(0.0f);
    return;  // the combining kernel reads only the chunks with keys
  }
  const std::int64_t kv_head = first_head / (a.heads / a.kv_heads), key_stride = a.kv_heads * L * kSize;
  const std::int64_t start = kv_head * L * kSize;
  const auto* keys = reinterpret_cast<const uint4*>(static_cast<const T*>(a.k_cache) + start) + part;
  const auto* values = reinterpret_cast<const uint4*>(static_cast<const T*>(a.v_cache) + start) + part;
  const std::int64_t rows_per_key = key_stride / kSize;  // key_stride in packs

  uint4 kb[kRounds], vb[kRounds];
#pragma unroll
  for (int r = 0; r < kRounds; ++r) {
    const std::int64_t j = std::min(first + (r * kWarps + warp) * kGroup + sub, length - 1);
    const std::int64_t at = key_row(a, b, j) * rows_per_key;
    kb[r] = keys[at];
    vb[r] = values[at];
  }
  __shared__ float warp_top[kWarps], warp_sum[kWarps];
  __shared__ float warp_acc[kWarps][L * kSize];
  // Each shared array's writes for head g + 1 come after a barrier that every read for head g precedes.
  for (int g = 0; g < group; ++g) {
    const std::int64_t row = bt * a.heads + first_head + g;
    const Pack<T> qp = reinterpret_cast<const Pack<T>*>(static_cast<const T*>(a.q) + row * L * kSize)[part];
    float q[kSize];
#pragma unroll
    for (int e = 0; e < kSize; ++e) q[e] = to_float(qp.v[e]) * a.scale * kLog2e;
    float s[kRounds];
    float top = -INFINITY;
#pragma unroll
    for (int r = 0; r < kRounds; ++r) {
      Pack<T> k;
      *reinterpret_cast<uint4*>(&k) = kb[r];
      float dot = 0;
#pragma unroll
      for (int e = 0; e < kSize; ++e) dot += q[e] * to_float(k.v[e]);
#pragma unroll
      for (int o = L / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      s[r] = first + (r * kWarps + warp) * kGroup + sub < length ? dot : -INFINITY;
      top = fmaxf(top, s[r]);
    }
    // The block's largest score (every group's lanes hold their key's score).
#pragma unroll
    for (int o = 16; o >= L; o >>= 1) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, o));
    if (lane == 0) warp_top[warp] = top;
    __syncthreads();
    top = warp_top[0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) top = fmaxf(top, warp_top[w]);  // finite: key `first` is seen

    float sum = 0, acc[kSize] = {};
#pragma unroll
    for (int r = 0; r < kRounds; ++r) {
      const float p = exp2f(s[r] - top);  // 0 for a dropped key
      sum += p;
      Pack<T> v;
      *reinterpret_cast<uint4*>(&v) = vb[r];
#pragma unroll
      for (int e = 0; e < kSize; ++e) acc[e] += p * to_float(v.v[e]);
    }
    // The groups' sums into lanes 0 .. L − 1, then the warps' through shared memory.
#pragma unroll
    for (int o = 16; o >= L; o >>= 1) {
      sum += __shfl_xor_sync(0xffffffffu, sum, o);
#pragma unroll
      for (int e = 0; e < kSize; ++e) acc[e] += __shfl_xor_sync(0xffffffffu, acc[e], o);
    }
    if (lane == 0) warp_sum[warp] = sum;
    if (sub == 0)
#pragma unroll
      for (int e = 0; e < kSize; ++e) warp_acc[warp][part * kSize + e] = acc[e];
    __syncthreads();
    float total = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += warp_sum[w];
    for (int d = threadIdx.x; d < L * kSize; d += blockDim.x) {
      float o = 0;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) o += warp_acc[w][d];
      if (whole)
        static_cast<T*>(a.out)[row * L * kSize + d] = from_float<T>(o / total);
      else
        a.partial[(row * gridDim.y + blockIdx.y) * (L * kSize + 2) + 2 + d] = o;
    }
    if (!whole && threadIdx.x == 0) {
      float* head = a.partial + (row * gridDim.y + blockIdx.y) * (L * kSize + 2);
      head[0] = top, head[1] = total;
    }
  }
}

// One block a query row, a thread an element of the head: the row's chunks rescaled to their common
// maximum and added, divided by the sum of exponentials.
template <typename T, int L>
__global__ void decode_attention_combine_kernel(DecodeAttention a, int chunks) {
  await_previous_kernel();
  constexpr int kDim = L * Pack<T>::kSize;
  const std::int64_t row = blockIdx.x, bt = row / a.heads;
  const std::int64_t length = keys_seen(a, bt / a.tokens, bt % a.tokens);
  const int used = static_cast<int>(std::min<std::int64_t>(chunks, (length + kChunk<T, L> - 1) / kChunk<T, L>));
  const float* part = a.partial + row * chunks * (kDim + 2);
  const int d = threadIdx.x;
  if (used == 0) {
    static_cast<T*>(a.out)[row * kDim + d] = from_float<T>(0.0f);
    return;
  }
  float top = -INFINITY;
  for (int c = 0; c < used; ++c) top = fmaxf(top, part[c * (kDim + 2)]);
  float sum = 0, o = 0;
  for (int c = 0; c < used; ++c) {
    const float* p = part + c * (kDim + 2);
    const float w = exp2f(p[0] - top);
    sum += p[1] * w;
    o += p[2 + d] * w;
  }
  static_cast<T*>(a.out)[row * kDim + d] = from_float<T>(o / sum);
}

// Lanes a key takes (16-byte packs in a head), or 0 where the kernels do not take the head size.
int lanes_per_key(Element type, std::int64_t head_dim) {
  const std::int64_t lanes = head_dim / pack_elements(type);
  const bool whole = head_dim % pack_elements(type) == 0;
  return whole && (lanes == 4 || lanes == 8 || lanes == 16 || lanes == 32) ? static_cast<int>(lanes) : 0;
}

int chunk_keys(Element type, std::int64_t head_dim) {
  return kWarps * kRounds * (32 / lanes_per_key(type, head_dim));
}

// The query heads a block takes: all those of a key/value head where that still gives the GPU a few
// blocks an SM, so that each key is read once; else one, for the parallelism a small batch needs.
int heads_a_block(const DecodeAttention& a, unsigned chunks) {
  static const int sms = [] {
    int device = 0, count = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device);
    return count > 0 ? count : 100;
  }();
  const std::int64_t group = a.heads / a.kv_heads;
  const std::int64_t grouped_blocks = a.batch * a.tokens * a.kv_heads * static_cast<std::int64_t>(chunks);
  return group > 1 && grouped_blocks >= 4 * sms ? static_cast<int>(group) : 1;
}

template <typename T, int L>
void launch_decode_attention(const DecodeAttention& a, cudaStream_t stream) {
  const auto chunks = static_cast<unsigned>((a.visible + kChunk<T, L> - 1) / kChunk<T, L>);
  const int group = heads_a_block(a, chunks);
  const std::int64_t blocks = a.batch * a.tokens * a.heads / group;
  launch_overlapping(decode_attention_chunk_kernel<T, L>, dim3(static_cast<unsigned>(blocks), chunks), kWarps * 32, 0,
                     stream, a, group);
  if (chunks > 1)
    launch_overlapping(decode_attention_combine_kernel<T, L>, static_cast<unsigned>(a.batch * a.tokens * a.heads),
                       static_cast<unsigned>(a.head_dim), 0, stream, a, static_cast<int>(chunks));
}

}  // namespace

bool decode_attention_takes(Element type, std::int64_t head_dim) {
  return lanes_per_key(type, head_dim) > 0;
}

std::int64_t decode_attention_workspace(Element type, const DecodeAttention& a) {
  if (!decode_attention_takes(type, a.head_dim) || a.visible < 1) return 0;
  const std::int64_t chunks = (a.visible + chunk_keys(type, a.head_dim) - 1) / chunk_keys(type, a.head_dim);
  return chunks > 1 ? a.batch * a.tokens * a.heads * chunks * (a.head_dim + 2) : 0;
}

const char* decode_attention(Element type, const DecodeAttention& a, void* stream) {
  if (!decode_attention_takes(type, a.head_dim))
    return "decode_attention takes heads of 4, 8, 16 or 32 16-byte packs (32 to 256 elements of bf16 or fp16, 16 to "
           "128 of fp32)";
  if (a.kv_heads < 1 || a.heads % a.kv_heads != 0) return "decode_attention: heads must be a multiple of kv_heads";
  if (a.visible < 1 || a.visible > a.max_tokens) return "decode_attention: visible must be 1 to max_tokens";
  if (a.block_table && a.block_size < 1) return "decode_attention: a block table needs its block size";
  const std::int64_t rows = a.batch * a.tokens * a.heads;
  if (rows == 0) return nullptr;
  if (rows > 0x7fffffff) return "decode_attention: more query rows than a grid holds";
  if (decode_attention_workspace(type, a) > 0 && a.partial == nullptr) return "decode_attention needs its workspace";
  const auto s = static_cast<cudaStream_t>(stream);
  for_element(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    switch (lanes_per_key(type, a.head_dim)) {
      case 4:
        launch_decode_attention<T, 4>(a, s);
        break;
      case 8:
        launch_decode_attention<T, 8>(a, s);
        break;
      case 16:
        launch_decode_attention<T, 16>(a, s);
        break;
      default:
        launch_decode_attention<T, 32>(a, s);
        break;
    }
  });
  return launch_error();
}

}  // namespace xpuperf::nvidia::kernels
