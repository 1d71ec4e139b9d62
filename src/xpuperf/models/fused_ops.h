#pragma once
// The models' fused steps. With `use_kernels` (the fused_kernels switch) each is one of xpuperf's
// operators through PyTorch's dispatcher (ops/operators.h), which runs the device's registered kernel
// where there is one (NVIDIA's CUDA kernels: vendors/nvidia/plugin; a vendor's from its plug-in) and
// the composite one elsewhere; without, the composite one (ATen's operators) directly. The kernels
// follow ATen's arithmetic and rounding, so the two paths agree to the last bit or two. What follows
// says what NVIDIA's kernels do where they differ from the composite operators.

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "xpuperf/ops/operators.h"

namespace xpuperf::models {

struct KvStep;

namespace fused {

// (x + delta, RMSNorm(x + delta) × weight) over the last dimension; delta undefined: (x, RMSNorm(x) ×
// weight). The residual stream's add and the next norm in one pass; where autograd records, a kernel
// with a backward kernel (training_kernels.h), which also takes a float x with a bf16 or half delta
// (the fp32 residual stream under autocast). out_type: the norm's output cast to it, as add_layer_norm's
// (below): with a float x, the training kernel writes the next products' bf16 or half input directly.
std::pair<torch::Tensor, torch::Tensor> add_rms_norm(const torch::Tensor& x, const torch::Tensor& delta,
                                                     const torch::Tensor& weight, double eps, bool use_kernels,
                                                     std::optional<torch::ScalarType> out_type = std::nullopt);

// (x + delta, LayerNorm(x + delta) × weight + bias) over the last dimension; delta undefined: (x,
// LayerNorm(x)). One kernel for inference (BERT's post-norm residual); where autograd records, a
// kernel with a backward kernel (training_kernels.h) that also takes a float x with a bf16 or half
// delta, as add_rms_norm's (GPT-2's pre-norm residual stream under autocast).
// delta_dropout > 0: x + dropout(delta) as training's dropout (each element kept with probability
// 1 − p, scaled by 1 / (1 − p)); the kernels draw the mask in the same pass (GPT's residual dropout
// before the add), where ATen's operators take a pass of their own each way.
// out_type: the norm's output cast to it (rounded once from float, as a cast of it). With a float x and
// bf16 or half out_type (delta's, where delta is given), the training kernel writes it directly: the input
// of the next product under autocast, without a float output and its cast each way.
std::pair<torch::Tensor, torch::Tensor> add_layer_norm(const torch::Tensor& x, const torch::Tensor& delta,
                                                       const torch::Tensor& weight, const torch::Tensor& bias,
                                                       double eps, bool use_kernels, double delta_dropout = 0,
                                                       std::optional<torch::ScalarType> out_type = std::nullopt);
// add_layer_norm's (sum, out) and a copy of out in delta's type, for a post-norm residual under autocast
// (BERT's): out stays the float stream the next residual adds, the copy is the next products' input.
// With a float x and a bf16 or half delta, the training kernel writes both in one pass and adds their
// gradients in float on the way back; elsewhere add_layer_norm's, the copy a cast. Needs delta and bias.
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> add_layer_norm_with_copy(
    const torch::Tensor& x, const torch::Tensor& delta, const torch::Tensor& weight, const torch::Tensor& bias,
    double eps, bool use_kernels, double delta_dropout = 0);

// The type products take under autocast on x's device, where x is float and autocast is on (the out_type
// for a pre-norm block's norms); else none.
std::optional<torch::ScalarType> autocast_product_type(const torch::Tensor& x);

// GELU's forms: the tanh approximation (GPT-2's "gelu_new") and the exact one (erf: BERT's, ViT's).
enum class Gelu { Tanh, Erf };

// GELU (tanh form, or `form`) of h + bias, h the output of a projection without its bias (GPT-2's c_fc,
// ViT's mlp.0, their bias left out). The kernels add the bias and apply GELU in one pass, and in one pass back give
// GELU's gradient and sum the bias's (training_kernels.h), where ATen's path runs GELU's backward and
// then a column sum of its output for the bias. A bias of another type than h (fp32 weights under
// autocast) is cast to h's first, as the projection would.
torch::Tensor bias_gelu(const torch::Tensor& h, const torch::Tensor& bias, bool use_kernels, Gelu form = Gelu::Tanh);

// x.argmax(-1), as ATen's (the first of equal largest, NaN largest): for many rows on CUDA (the
// masked-LM head's vocabulary logits at every position) one block a row, a third faster than ATen's
// reduction there.
torch::Tensor argmax(const torch::Tensor& x, bool use_kernels);

// SiLU(gate) × up, where the last dimension of gate_up holds gate then up.
torch::Tensor silu_mul(const torch::Tensor& gate_up, bool use_kernels);
// SiLU(gate) × up of two tensors (the gate and up projections' outputs in training), with a backward
// kernel too: one pass each way where ATen makes several and keeps SiLU(gate) for backward.
torch::Tensor silu_mul(const torch::Tensor& gate, const torch::Tensor& up, bool use_kernels);

// q, k and v of a stacked projection qkv (batch, tokens, heads + 2 kv_heads, head_dim), q and k
// rotated by cos / sin_signed (batch or 1, tokens, 1, head_dim). With a step, the kernel also
// writes k and v into the step's slots of the layer's cache (`cached` says it did; the attention
// then only reads the cache), and a decoding step gets no k back (it reads the cache).
using ops::RotatedQkv;
RotatedQkv rotary_qkv(const torch::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads, const torch::Tensor& cos,
                      const torch::Tensor& sin_signed, const KvStep* step, std::int64_t layer, bool use_kernels);

// rotary_qkv of linear(x, qkv_weight) viewed as (batch, tokens, heads + 2 kv_heads, head_dim), x (batch,
// tokens, in). For a decoding step (a step that is not fresh, of 1 to 4 rows) the product and the
// rotation are one kernel: q comes back, k and v go into the cache, the values those of the two
// kernels to the bit.
RotatedQkv linear_rotary_qkv(const torch::Tensor& x, const torch::Tensor& qkv_weight, std::int64_t heads,
                             std::int64_t kv_heads, std::int64_t head_dim, const torch::Tensor& cos,
                             const torch::Tensor& sin_signed, const KvStep* step, std::int64_t layer, bool use_kernels);

// x × cos + roll(x, half) × sin_signed over the head width: rotary positions with ATen's operators.
torch::Tensor rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin_signed);

// x × weightᵀ (a bias-free Linear, weight (out, in)). For the 1 to 4 rows of a decoding step the
// GEMV kernel (vendors/nvidia/plugin/kernels/fused_kernels.h), which streams the weight at the memory's speed where a
// general matrix product of one row does not; otherwise, and for more rows, ATen's product.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, bool use_kernels);

// SiLU(x × gateᵀ) × (x × upᵀ), gate_up_weight (2 units, in) the gate rows then the up rows (the Llama
// MLP's stacked weights): for a decoding step's 1 to 4 rows one GEMV that streams each unit's two
// rows and writes the product, the same to the bit as silu_mul(linear(x, gate_up_weight)) on the
// kernels; otherwise those two.
torch::Tensor linear_silu_mul(const torch::Tensor& x, const torch::Tensor& gate_up_weight, bool use_kernels);

// A decoding step's attention (a step that is not `fresh`) over the layer's cache, q (batch, heads,
// tokens, head_dim) as decoder_attention takes it: the split-key kernel (vendors/nvidia/plugin/kernels/fused_kernels.h:
// decode_attention), the result (batch, heads, tokens, head_dim) as ATen's attention with the step's
// additive mask gives it (the softmax's weights kept in float, where ATen's rounds them to the type
// before the weighted sum). Nothing where the kernel does not take the tensors (not CUDA, a head
// size the kernel does not take (fused_kernels.h), types that differ, autograd recording).
std::optional<torch::Tensor> decode_attention(const torch::Tensor& q, const KvStep& step, std::int64_t layer);

// The mean cross entropy of rows of logits (rows, vocab) against targets (rows; −100 ignored),
// with its gradient. The kernels (CUDA logits whose rows are whole 16-byte packs: the output
// layer's vocabulary padded to a multiple of 64) read the logits once forward and once backward in
// their own type and write the gradient in it; ATen's path (log-softmax in float, then the
// negative log-likelihood) writes and reads an fp32 copy of the logits several times.
// `gradient_in_logits`: the kernels' backward overwrites the logits with their gradient, so a step
// holds one tensor of the logits' size, not two (the output layer's logits are the largest tensor of
// a language model's step). For logits made for this loss alone: nothing may read them after the
// backward.
torch::Tensor cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, bool use_kernels,
                            bool gradient_in_logits = false);

// Whether `name` is in the comma-separated `list` (ops::kernel_listed: XPUPERF_KERNELS_OFF's names,
// e.g. decode_attention; the training kernels add_norm_with_backward, bias_gelu, cross_entropy).
using ops::kernel_listed;
// Whether this binary has CUDA kernels for xpuperf's operators (LibTorch with CUDA, NVIDIA's plug-in).
bool kernels_built();

// Whether the operator `op` that follows a projection's bias-free product runs a kernel on its input
// x: the device has one registered for it, and the layer is whole (not split by tensor parallelism, no
// LoRA adapter), whose product is then the weight's alone. Elsewhere the layer runs as it is.
template <typename Layer>
bool kernels_run_after(const Layer& layer, const torch::Tensor& x, std::string_view op) {
  return !layer.is_split() && !layer.has_adapter() && ops::has_kernel(op, x.device().type());
}

}  // namespace fused
}  // namespace xpuperf::models
