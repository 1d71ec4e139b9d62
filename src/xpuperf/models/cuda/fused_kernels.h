#pragma once
// CUDA kernels that do in one pass what the Llama decoder's element-wise steps do in several ATen
// kernels (the residual add and RMSNorm, SiLU × up, rotary on q and k with the KV-cache write).
// Torch-free: raw pointers to contiguous memory and a cudaStream_t passed as void*, so that this
// header and its .cu compile without LibTorch. models/fused_ops.h is the tensor-level front with
// the ATen fallback. Each function returns null when the kernel was launched, else CUDA's error
// text. The arithmetic (float inside, rounding to the element type where ATen's
// separate kernels round) follows those kernels.

#include <cstdint>

namespace xpuperf::models::kernels {

enum class Element { Float, Half, BFloat16 };

// sum = x + delta (delta null: no add, sum untouched), out = RMSNorm(sum) × weight, row by row
// over `width` elements: mean of squares in float, the normalised row rounded to the element type
// before the weight multiplies it (Hugging Face's LlamaRMSNorm). Pointers 16-byte aligned, width a
// multiple of 16 / element size (pack_elements), the row at most 32 KiB (it is kept in shared memory).
const char* add_rms_norm(Element type, const void* x, const void* delta, const void* weight, void* sum, void* out,
                         std::int64_t rows, std::int64_t width, float eps, void* stream);

// out (rows, width) = SiLU(gate) × up, where each row of gate_up (rows, 2 × width) holds gate then
// up. Same alignment rule as add_rms_norm.
const char* silu_mul(Element type, const void* gate_up, void* out, std::int64_t rows, std::int64_t width, void* stream);

// Rotary positions on q and k of one stacked projection qkv (batch, tokens, heads + 2 kv_heads,
// head_dim): out[i] = x[i] cos[i] + x[i ± half] sin_signed[i] (the roll form of rotate_half).
struct RotaryQkv {
  const void* qkv = nullptr;
  const void* cos = nullptr;         // (cos_batch, tokens, head_dim), cos_batch 1 or batch
  const void* sin_signed = nullptr;  // the same shape: −sin in the first half, +sin in the second
  void* q = nullptr;                 // (batch, tokens, heads, head_dim)
  void* k = nullptr;                 // (batch, tokens, kv_heads, head_dim), or null: not wanted
  // The cache of one layer (slots, max_tokens, kv_heads, head_dim), or null: row b's token t is
  // written to slot slots[b] at position positions[b × positions_row_stride + t], k rotated.
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  const std::int64_t* slots = nullptr;
  const std::int64_t* positions = nullptr;
  std::int64_t positions_row_stride = 0;
  std::int64_t batch = 0, tokens = 0, heads = 0, kv_heads = 0, head_dim = 0, cos_batch = 1, max_tokens = 0;
};
const char* rotary_qkv(Element type, const RotaryQkv& args, void* stream);

// Attention of one new token a row over its layer's cached keys and values (a decoding step),
// split over the keys so that a batch of one still fills the GPU (FlashDecoding's split-K): a
// block scores one chunk of one query head's keys into a partial softmax (its maximum, its sum and
// the weighted values, in float), then a second kernel merges each head's chunks. Row b reads slot
// slots[b]; keys 0..positions[b] are visible (the new token's own is already in the cache). Query
// head h reads key/value head h / (heads / kv_heads). head_dim a multiple of pack_elements, at
// most kMaxDecodeHeadDim; q, out and the cache 16-byte aligned.
constexpr std::int64_t kMaxDecodeHeadDim = 256;
struct DecodeAttention {
  const void* q = nullptr;                  // (batch, heads, head_dim)
  const void* k_cache = nullptr;            // (slots, max_tokens, kv_heads, head_dim)
  const void* v_cache = nullptr;            // the same
  const std::int64_t* slots = nullptr;      // (batch)
  const std::int64_t* positions = nullptr;  // (batch)
  void* out = nullptr;                      // (batch, heads, head_dim)
  float* partial = nullptr;                 // decode_attention_workspace(batch, heads, head_dim, visible) floats
  std::int64_t batch = 0, heads = 0, kv_heads = 0, head_dim = 0, max_tokens = 0;
  std::int64_t visible = 0;  // keys the chunks cover: more than any row's position
  float scale = 0;           // of the scores: 1 / sqrt(head_dim)
};
std::int64_t decode_attention_workspace(std::int64_t batch, std::int64_t heads, std::int64_t head_dim,
                                        std::int64_t visible);
const char* decode_attention(Element type, const DecodeAttention& args, void* stream);

// Elements in a 16-byte access.
inline int pack_elements(Element type) {
  return type == Element::Float ? 4 : 8;
}

}  // namespace xpuperf::models::kernels
