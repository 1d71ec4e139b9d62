#pragma once
// CUDA kernels for inference passes: what the Llama decoder's element-wise steps do in several ATen
// kernels (the residual add and RMSNorm, SiLU × up, rotary on q and k with the KV-cache write), the
// decoding step's GEMV and its attention over the KV cache, and the row argmax of a masked-LM head's
// logits.
// Torch-free: raw pointers to contiguous memory and a cudaStream_t passed as void*, so that this
// header and its .cu compile without LibTorch. models/fused_ops.h is the tensor-level front with
// the ATen fallback. Each function returns null when the kernel was launched, else CUDA's error
// text. The arithmetic (float inside, rounding to the element type where ATen's
// separate kernels round) follows those kernels.

#include <cstdint>

namespace xpuperf::nvidia::kernels {

enum class Element { Float, Half, BFloat16 };

// sum = x + delta (delta null: no add, sum untouched), out = RMSNorm(sum) × weight, row by row
// over `width` elements: mean of squares in float, the normalised row rounded to the element type
// before the weight multiplies it (Hugging Face's LlamaRMSNorm). Pointers 16-byte aligned, width a
// multiple of 16 / element size (pack_elements), the row at most 32 KiB (it is kept in shared memory).
const char* add_rms_norm(Element type, const void* x, const void* delta, const void* weight, void* sum, void* out,
                         std::int64_t rows, std::int64_t width, float eps, void* stream);

// sum = x + delta (delta null: no add, sum untouched), out = LayerNorm(sum) × weight + bias, row by
// row: the sum rounded to the element type (as ATen's add leaves it), mean and variance in float
// (two passes over the row), the output rounded once (as ATen's layer norm). BERT's post-norm
// residual (LayerNorm(dense(h) + input)) in one pass instead of two. Same rules as add_rms_norm.
const char* add_layer_norm(Element type, const void* x, const void* delta, const void* weight, const void* bias,
                           void* sum, void* out, std::int64_t rows, std::int64_t width, float eps, void* stream);

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

// y (rows, n) = x (rows, k) × weightᵀ, weight (n, k) row-major (a Linear's), for the few rows of a
// decoding step (1 to kMaxGemvRows): reading the weight is all the time such a product takes, so
// each warp streams whole weight rows past every input row once, in 16-byte loads, the sums in
// float (as cuBLAS's), rounded to the element type at the end. Pointers 16-byte aligned, k a
// multiple of pack_elements. On Hopper the weight's first bytes are loaded before the kernel waits
// for the one launched before it (programmatic dependent launch), so the weight must not be that
// kernel's output; x may be.
inline constexpr std::int64_t kMaxGemvRows = 4;
const char* gemv(Element type, const void* x, const void* weight, void* y, std::int64_t rows, std::int64_t n,
                 std::int64_t k, void* stream);
// rotary_qkv of x × qkv_weightᵀ for a decoding step (batch × tokens = 1 to kMaxGemvRows rows of x,
// qkv_weight ((heads + 2 kv_heads) × head_dim, k)): q written to args.q, k and v into the cache (args.k
// must be null: a decoding step reads k from the cache); args.qkv is not read. The values are those
// of gemv then rotary_qkv to the bit: one kernel fewer, and no qkv round trip. Same rules as gemv.
const char* gemv_rotary_qkv(Element type, const void* x, const void* qkv_weight, const RotaryQkv& args, std::int64_t k,
                            void* stream);

// y (rows, units) = SiLU(x × gateᵀ) × (x × upᵀ), gate_up_weight (2 units, k) holding the gate rows
// then the up rows (the Llama MLP's stacked gate_up): gemv's streaming with each warp reading a unit's
// two rows, rounded as gemv then silu_mul round, so the result is theirs to the bit. Same rules as gemv.
const char* gemv_silu_mul(Element type, const void* x, const void* gate_up_weight, void* y, std::int64_t rows,
                          std::int64_t units, std::int64_t k, void* stream);

// Attention of a decoding step's queries over one layer's key/value cache, split over the keys (as
// flash decoding splits it): each block takes one query head of one token and a chunk of the keys
// that token sees, and writes the chunk's running maximum, its sum of exponentials and its weighted
// values in float to `partial`; a second kernel adds the chunks up (none when one chunk holds all
// the keys). Row b's token t sees the keys at positions 0 to positions[b × positions_row_stride + t]
// of slot b, at most the first `visible` (the attention's additive mask in KvStep); a token that
// sees none gets zeros. Scores, softmax and the weighted sum in float, the output rounded once.
// A query head h reads key/value head h / (heads / kv_heads). ATen's attention gives a decoding
// step's one query a block a head and walks the keys in it; spreading the keys over the GPU is
// what lets the cache's bytes stream at the memory's rate.
struct DecodeAttention {
  const void* q = nullptr;        // (batch, tokens, heads, head_dim)
  const void* k_cache = nullptr;  // one layer's (slots, max_tokens, kv_heads, head_dim); row b reads slot b
  const void* v_cache = nullptr;
  const std::int64_t* positions = nullptr;
  std::int64_t positions_row_stride = 0;
  void* out = nullptr;       // (batch, tokens, heads, head_dim)
  float* partial = nullptr;  // decode_attention_workspace floats
  std::int64_t batch = 0, tokens = 0, heads = 0, kv_heads = 0, head_dim = 0, max_tokens = 0, visible = 0;
  float scale = 0;  // the scores' (1 / √head_dim for ATen's default)
  // A paged cache instead (models/paged_kv.h): k_cache and v_cache are pools (blocks, block_size,
  // kv_heads, head_dim) and row b's key j is in block block_table[b × block_table_stride + j /
  // block_size], place j % block_size; max_tokens is then the keys a row's table reaches.
  const std::int64_t* block_table = nullptr;
  std::int64_t block_table_stride = 0, block_size = 0;
};
// Whether the kernels take this head size: 4, 8, 16 or 32 16-byte packs (32 to 256 elements of bf16
// or fp16, 16 to 128 of fp32), a key read by that many lanes in 16-byte loads.
bool decode_attention_takes(Element type, std::int64_t head_dim);
// The floats `partial` must hold for these arguments.
std::int64_t decode_attention_workspace(Element type, const DecodeAttention& args);
const char* decode_attention(Element type, const DecodeAttention& args, void* stream);

// The mean cross entropy's two halves over rows of logits (rows, vocab) and targets (rows; −100:
// ignored), one row a block, never an fp32 copy of the logits. Forward: each row's log-sum-exp
// (lse) and its loss lse − logit[target] (0 for an ignored row), in float, in one pass (the running
// maximum rescales the running sum). Backward: grad = (exp(logit − lse) − [column = target]) ×
// scale[0] (the loss's gradient over the counted rows, read on the device: no host sync), 0 for an
// ignored row, in the logits' type; grad may be the logits' own buffer. A target outside [0, vocab)
// gives a NaN loss. vocab a multiple of pack_elements, pointers 16-byte aligned.
const char* cross_entropy_forward(Element type, const void* logits, const std::int64_t* targets, float* lse,
                                  float* losses, std::int64_t rows, std::int64_t vocab, void* stream);
const char* cross_entropy_backward(Element type, const void* logits, const std::int64_t* targets, const float* lse,
                                   const float* scale, void* grad, std::int64_t rows, std::int64_t vocab, void* stream);

// out[r] = the column of row r's largest element in x (rows, width), row-major with no gap between
// rows (any width: a row need not start on 16 bytes), as ATen's argmax: the first of equal largest
// elements, a NaN larger than any number. One block a row in 16-byte loads: on an H200 it reads
// BERT's 30,522 logits a position at 2.3 TB/s, where ATen's reduction read them at 1.75.
const char* argmax_rows(Element type, const void* x, std::int64_t* out, std::int64_t rows, std::int64_t width,
                        void* stream);

// Elements in a 16-byte access.
inline int pack_elements(Element type) {
  return type == Element::Float ? 4 : 8;
}

}  // namespace xpuperf::nvidia::kernels
