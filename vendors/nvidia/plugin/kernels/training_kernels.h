#pragma once
// CUDA kernels with their backward passes, for training: RMSNorm and LayerNorm with the residual add
// before them, and SiLU(gate) × up. Where autograd records, ATen runs each of these as several kernels forward and
// several more backward (each a pass over activations of tokens × width), and keeps intermediate
// results for backward; here each is one pass forward and one backward, keeping only the inputs (and
// a float a row for the norm). Torch-free like fused_kernels.h (raw pointers, the stream as void*);
// models/fused_ops.cpp wraps them as autograd functions. Each returns null when launched, else
// CUDA's error text.

#include <cstdint>

#include "kernels/fused_kernels.h"

namespace xpuperf::nvidia::kernels {

// Dropout on the norm kernels' delta (sum = x + dropout(delta)), as ATen's training dropout: each
// element kept with probability 1 − p and then scaled by 1 / (1 − p), in float, rounded to delta's
// type. The random numbers are Philox's (cuRAND) from `seed` and the call's number, which the
// forward kernel reads from device memory (`call`): the caller advances it after each launch on the
// stream, so a CUDA graph that replays the launch draws new numbers each time. The forward writes
// `keep` (a byte an element, 1 kept), which the backward reads.
struct DeltaDropout {
  float p = 0;  // 0: no dropout
  unsigned long long seed = 0;
  const std::int64_t* call = nullptr;
  std::uint8_t* keep = nullptr;
};

// The widest row the norm kernels take: a thread keeps its part of the row in registers.
std::int64_t max_rms_norm_width(Element x_type);

// sum = x + delta (delta null: no add, sum untouched; delta may be of another type than x when x is
// float: bf16 or half projections added to an fp32 residual stream, as under autocast), rounded to
// x's type as ATen's add leaves it, after `dropout` on delta when given (null: none); out = weight × RMSNorm(sum)
// (the normalised row rounded to x's type before the weight multiplies it, Hugging Face's LlamaRMSNorm), rounded
// to out_type: x's, or delta's (with x float: the bf16 or half input of the next products under autocast, written
// once instead of a float output and its casts; without delta, delta_type names it); rstd[row] = 1 / the row's
// root mean square plus eps, in float, for backward. weight in x's type. Pointers 16-byte aligned, width a
// multiple of pack_elements(x_type) and at most max_rms_norm_width.
const char* rms_norm_forward(Element x_type, Element delta_type, Element out_type, const void* x, const void* delta,
                             const void* weight, void* sum, void* out, float* rstd, std::int64_t rows,
                             std::int64_t width, float eps, const DeltaDropout* dropout, void* stream);

// The gradients of rms_norm_forward: from grad_out (out_type) and grad_sum (the gradient reaching sum
// from later layers, x's type; null: none), grad_x = grad_sum + the norm's gradient, in x's type, the
// same in delta's type into grad_delta (null: not wanted), and weight_partials (blocks × width, float)
// the weight's gradient summed over each block's rows (the caller adds the blocks' rows). `input` is
// sum (or x without delta). blocks: rms_norm_backward_blocks(rows). With the forward's `dropout`,
// grad_delta is dropout's gradient: grad_x × keep / (1 − p).
std::int64_t rms_norm_backward_blocks(std::int64_t rows);
const char* rms_norm_backward(Element x_type, Element delta_type, Element out_type, const void* input,
                              const void* weight, const float* rstd, const void* grad_out, const void* grad_sum,
                              void* grad_x, void* grad_delta, float* weight_partials, std::int64_t rows,
                              std::int64_t width, const DeltaDropout* dropout, void* stream);

// The same for LayerNorm with a bias, as ATen's layer_norm computes it: out = weight × (sum − mean) ×
// rstd + bias in float, rounded once to out_type; mean[row] and rstd[row] kept for backward. out_type is
// x's, or delta's (with x float: the bf16 or half input of the next product under autocast, written
// once instead of a float output and its cast; without delta, delta_type names it). out_low (null:
// none) also receives out in delta's type, as a cast of it (a post-norm residual: out stays the float
// stream, out_low feeds the products). weight and bias in x's type; the same limits as the RMSNorm
// kernels.
const char* layer_norm_forward(Element x_type, Element delta_type, Element out_type, const void* x, const void* delta,
                               const void* weight, const void* bias, void* sum, void* out, void* out_low, float* mean,
                               float* rstd, std::int64_t rows, std::int64_t width, float eps,
                               const DeltaDropout* dropout, void* stream);
// Its gradients, as rms_norm_backward's, from grad_out (in out_type; null: none) plus grad_low (out_low's
// gradient in delta's type; null: none), added in float, with the bias's gradient summed over each
// block's rows into bias_partials (blocks × width, float) beside the weight's.
const char* layer_norm_backward(Element x_type, Element delta_type, Element out_type, const void* input,
                                const void* weight, const float* mean, const float* rstd, const void* grad_out,
                                const void* grad_low, const void* grad_sum, void* grad_x, void* grad_delta,
                                float* weight_partials, float* bias_partials, std::int64_t rows, std::int64_t width,
                                const DeltaDropout* dropout, void* stream);

// out = SiLU(gate) × up over n elements (gate and up separate tensors of one type: the outputs of two
// projections), with SiLU rounded to the type first as ATen's silu leaves it. Backward: grad_gate =
// SiLU'(gate) × (grad_out × up rounded), grad_up = grad_out × SiLU(gate), as ATen's mul and
// silu_backward compute them. Pointers 16-byte aligned, n a multiple of pack_elements.
const char* silu_mul_forward(Element type, const void* gate, const void* up, void* out, std::int64_t n, void* stream);
const char* silu_mul_backward(Element type, const void* gate, const void* up, const void* grad_out, void* grad_gate,
                              void* grad_up, std::int64_t n, void* stream);

// Rotary positions on one projection's q, k and v for training (Llama's joined q/k/v product):
// qkv (batch, tokens, heads + 2 kv_heads, head_dim) gives q (batch, tokens, heads, head_dim) and k
// (…, kv_heads, …) rotated, x × cos + roll(x, half) × sin_signed over the head width, and v copied,
// each contiguous in qkv's type; the tables cos and sin_signed (cos_batch, tokens, head_dim), cos_batch
// 1 or batch, in qkv's type or float (autocast's fp32 tables). As ATen computes it: x × cos rounded to
// the tables' type, then one rounding of the sum (to float, then to qkv's type, as autocast's cast of
// the float result). The backward writes qkv's gradient from q's, k's and v's: each of a rotated
// element's two terms (through x × cos and through the roll) rounded to qkv's type, then their sum, as
// autograd adds ATen's; v's copied. head_dim even.
struct RotaryShape {
  std::int64_t batch = 0, tokens = 0, heads = 0, kv_heads = 0, head_dim = 0, cos_batch = 1;
};
const char* rotary_forward(Element type, Element table_type, const RotaryShape& shape, const void* qkv, const void* cos,
                           const void* sin_signed, void* q, void* k, void* v, void* stream);
const char* rotary_backward(Element type, Element table_type, const RotaryShape& shape, const void* grad_q,
                            const void* grad_k, const void* grad_v, const void* cos, const void* sin_signed,
                            void* grad_qkv, void* stream);

// GELU's two forms: the tanh approximation (GPT-2's "gelu_new") and the exact one with erf (BERT's,
// ViT's).
enum class Gelu { Tanh, Erf };

// out = GELU(h + bias) over rows × width: h the output of a projection without its bias (GPT-2's c_fc,
// ViT's mlp.0, BERT's intermediate), bias of h's type. The sum is rounded to the type, as the projection with
// its bias leaves it, and GELU computed in float and rounded once, as ATen's gelu. Backward: grad_pre =
// grad_out × GELU'(h + bias), rounded as ATen's gelu_backward, and bias_partials (blocks × width,
// float): grad_pre summed over each of `blocks` groups of rows, blocks from bias_gelu_backward_blocks
// (the caller adds the blocks' rows: the bias's gradient, without a column sum of its own). Pointers
// 16-byte aligned, width a multiple of pack_elements; any width.
std::int64_t bias_gelu_backward_blocks(Element type, std::int64_t rows, std::int64_t width);
const char* bias_gelu_forward(Element type, const void* h, const void* bias, void* out, std::int64_t rows,
                              std::int64_t width, Gelu form, void* stream);
const char* bias_gelu_backward(Element type, const void* h, const void* bias, const void* grad_out, void* grad_pre,
                               float* bias_partials, std::int64_t rows, std::int64_t width, Gelu form, void* stream);

}  // namespace xpuperf::nvidia::kernels
