#pragma once
// xpuperf's own operators, registered with PyTorch's dispatcher in the `xpuperf` namespace
// (xpuperf::add_rms_norm, ...; the schemas are in operators.cpp). Each has three kinds of
// implementation, chosen by the dispatcher from the inputs' device:
//  - the composite one (ops/composite.h), ATen's operators, registered for every device
//    (CompositeImplicitAutograd): autograd comes from the ATen operators it calls;
//  - a vendor's kernels for its device's key: NVIDIA's for CUDA (vendors/nvidia/plugin), a
//    PrivateUse1 vendor's from its plug-in (TORCH_LIBRARY_IMPL(xpuperf, PrivateUse1, m), as
//    FlagGems replaces ATen's operators). A kernel registered for the device's key alone is taken
//    for forwards without autograd; one registered for its autograd key too (AutogradCUDA,
//    AutogradPrivateUse1) is taken in training as well and makes its own backward. A kernel that
//    does not take some inputs (a type or shape it lacks) hands them to the composite one.
//
// The functions here call the dispatcher; models reach them through models/fused_ops.h, whose
// `use_kernels` (the fused_kernels switch) chooses them over the composite ones. docs/VENDORS.md
// lists what a vendor's kernel must give.

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

namespace xpuperf::ops {

// (x + delta, RMSNorm(x + delta) × weight) over the last dimension; delta undefined: (x, RMSNorm(x)
// × weight). out_type: the norm's output cast to it.
std::tuple<torch::Tensor, torch::Tensor> add_rms_norm(const torch::Tensor& x, const torch::Tensor& delta,
                                                      const torch::Tensor& weight, double eps,
                                                      std::optional<torch::ScalarType> out_type = std::nullopt);

// (x + dropout(delta), LayerNorm(x + dropout(delta)) × weight + bias); delta undefined: (x, LayerNorm(x)).
// delta_dropout: training's dropout of delta before the add (0: none).
std::tuple<torch::Tensor, torch::Tensor> add_layer_norm(const torch::Tensor& x, const torch::Tensor& delta,
                                                        const torch::Tensor& weight, const torch::Tensor& bias,
                                                        double eps, double delta_dropout = 0,
                                                        std::optional<torch::ScalarType> out_type = std::nullopt);

// add_layer_norm's (sum, out) and out cast to delta's type (a post-norm residual under autocast).
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> add_layer_norm_with_copy(const torch::Tensor& x,
                                                                                 const torch::Tensor& delta,
                                                                                 const torch::Tensor& weight,
                                                                                 const torch::Tensor& bias, double eps,
                                                                                 double delta_dropout = 0);

// GELU(h + bias): the tanh approximation, or the exact (erf) form.
torch::Tensor bias_gelu(const torch::Tensor& h, const torch::Tensor& bias, bool erf = false);

// x.argmax(-1), the first of equal largest.
torch::Tensor argmax(const torch::Tensor& x);

// SiLU(gate) × up, the last dimension of gate_up holding gate then up.
torch::Tensor silu_mul(const torch::Tensor& gate_up);
// SiLU(gate) × up of two tensors (xpuperf::silu_mul.pair).
torch::Tensor silu_mul(const torch::Tensor& gate, const torch::Tensor& up);

// Where a forward's keys and values go: the layer's cache (slots, max_tokens, kv_heads, head_dim),
// each row's slot and each token's position. `decoding`: a step after the prefill, whose attention
// then reads k and v from the cache (a kernel that writes them returns no k).
struct CacheWrite {
  torch::Tensor k_cache, v_cache, slots, positions;
  bool decoding = false;
};

// q, k and v of a stacked projection qkv (batch, tokens, heads + 2 kv_heads, head_dim), q and k
// rotated by cos / sin_signed (batch or 1, tokens, 1, head_dim). `cached`: the implementation
// wrote k and v into `cache` (the composite one never does; the caller then writes them).
struct RotatedQkv {
  torch::Tensor q, k, v;  // (batch, tokens, heads or kv_heads, head_dim)
  bool cached = false;
};
RotatedQkv rotary_qkv(const torch::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads, const torch::Tensor& cos,
                      const torch::Tensor& sin_signed, const CacheWrite* cache = nullptr);

// rotary_qkv of linear(x, qkv_weight) viewed as (batch, tokens, heads + 2 kv_heads, head_dim).
RotatedQkv linear_rotary_qkv(const torch::Tensor& x, const torch::Tensor& qkv_weight, std::int64_t heads,
                             std::int64_t kv_heads, std::int64_t head_dim, const torch::Tensor& cos,
                             const torch::Tensor& sin_signed, const CacheWrite* cache = nullptr);

// x × weightᵀ (a bias-free Linear; a decoding step's 1 to 4 rows are what kernels speed up).
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight);

// SiLU(x × gateᵀ) × (x × upᵀ), gate_up_weight (2 units, in): the gate rows then the up rows.
torch::Tensor linear_silu_mul(const torch::Tensor& x, const torch::Tensor& gate_up_weight);

// A decoding step's attention, q (batch, heads, tokens, head_dim), over the first `visible` positions
// of the layer's cache (slots 0..batch-1), each token seeing the keys at or before its position
// (positions (batch, tokens)); (batch, heads, tokens, head_dim).
torch::Tensor decode_attention(const torch::Tensor& q, const torch::Tensor& k_cache, const torch::Tensor& v_cache,
                               const torch::Tensor& positions, std::int64_t visible);

// decode_attention over a paged KV cache (models/paged_kv.h): the layer's pools (blocks,
// block_size, kv_heads, head_dim), and row b's positions 0, 1, ... in the blocks that
// block_table[b] (batch, blocks a row; int64) lists in order; `visible` ≤ its blocks × block_size.
torch::Tensor paged_decode_attention(const torch::Tensor& q, const torch::Tensor& k_pool, const torch::Tensor& v_pool,
                                     const torch::Tensor& block_table, const torch::Tensor& positions,
                                     std::int64_t visible);

// The mean cross entropy of logits (rows, vocab) against targets (rows; −100 ignored).
// gradient_in_logits: a kernel may write the gradient over the logits (nothing reads them after).
torch::Tensor cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, bool gradient_in_logits = false);

// What follows a batch norm in the convolutional networks.
enum class Activation : std::int64_t { None = 0, Relu = 1, Relu6 = 2 };
// act(batch_norm(x) + residual) (residual undefined: no add), updating the running statistics
// (when given) in training as ATen's batch_norm does.
torch::Tensor batch_norm_act(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                             const torch::Tensor& running_mean, const torch::Tensor& running_var,
                             const torch::Tensor& residual, Activation act, bool training, double momentum, double eps);

// max_pool2d(x, kernel, stride, padding), ties to the window's first position.
torch::Tensor max_pool2d(const torch::Tensor& x, std::int64_t kernel, std::int64_t stride, std::int64_t padding);

// One Adam / AdamW step of an fp32 master weight whose model copy is bf16 (bf16_weights): the
// gradient (the weight's type) divided by grad_divisor (a one-element float tensor: clipping) where
// defined, master and moments updated in float, the master rounded into weight. In place; no
// gradient.
struct MasterAdamStep {
  double lr = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled = true;             // AdamW (decay applied to the weight) or Adam (added to the gradient)
  double bias_correction1 = 1;       // 1 - beta1^step
  double bias_correction2_sqrt = 1;  // sqrt(1 - beta2^step)
};
void master_adam_step(const torch::Tensor& master, const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq,
                      const torch::Tensor& grad, const torch::Tensor& weight, const MasterAdamStep& step,
                      const torch::Tensor& grad_divisor = {});

// The operators' names (without "xpuperf::"), for `xpuperf vendor check` and the docs.
const std::vector<std::string_view>& operator_names();

// Whether a kernel is registered for `op` (a name of operator_names(), "silu_mul.pair" for an
// overload) on this device type, beside the composite one: for forwards (the device's key) or,
// with `training`, for autograd too.
bool has_kernel(std::string_view op, c10::DeviceType device, bool training = false);
// Whether any of xpuperf's operators has a kernel on this device type.
bool device_has_kernels(c10::DeviceType device);

// Whether `name` is in `list`, names separated by commas (spaces around them ignored): the list of
// XPUPERF_KERNELS_OFF, whose kernels a vendor's plug-in then leaves to the composite operators, so
// that one build can be timed with and without each kernel (bench/llm_decode_ab.sh's A_ENV) or a
// loss curve told apart kernel by kernel (bench/kernel_curves.sh).
bool kernel_listed(const char* list, const char* name);
// Whether XPUPERF_KERNELS_OFF (read once) names the kernel.
bool switched_off(const char* name);

}  // namespace xpuperf::ops
