#pragma once
// The composite implementations of xpuperf's operators (ops/operators.h): ATen's operators only,
// so they run on every device and autograd differentiates them. They define the operators'
// results: a vendor's kernel is checked against them (`xpuperf vendor check`), and hands them the
// inputs it does not take. An undefined tensor is an absent optional argument.

#include <torch/torch.h>

#include <cstdint>
#include <optional>

#include "xpuperf/ops/operators.h"

namespace xpuperf::ops::composite {

std::tuple<torch::Tensor, torch::Tensor> add_rms_norm(const torch::Tensor& x, const torch::Tensor& delta,
                                                      const torch::Tensor& weight, double eps,
                                                      std::optional<torch::ScalarType> out_type = std::nullopt);
std::tuple<torch::Tensor, torch::Tensor> add_layer_norm(const torch::Tensor& x, const torch::Tensor& delta,
                                                        const torch::Tensor& weight, const torch::Tensor& bias,
                                                        double eps, double delta_dropout = 0,
                                                        std::optional<torch::ScalarType> out_type = std::nullopt);
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> add_layer_norm_with_copy(const torch::Tensor& x,
                                                                                 const torch::Tensor& delta,
                                                                                 const torch::Tensor& weight,
                                                                                 const torch::Tensor& bias, double eps,
                                                                                 double delta_dropout = 0);
torch::Tensor bias_gelu(const torch::Tensor& h, const torch::Tensor& bias, bool erf = false);
torch::Tensor argmax(const torch::Tensor& x);
torch::Tensor silu_mul(const torch::Tensor& gate_up);
torch::Tensor silu_mul(const torch::Tensor& gate, const torch::Tensor& up);
// x × cos + roll(x, half) × sin_signed over the head width: rotary positions.
torch::Tensor rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin_signed);
// Never writes a cache (cached is false): the caller writes k and v.
RotatedQkv rotary_qkv(const torch::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads, const torch::Tensor& cos,
                      const torch::Tensor& sin_signed);
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight);
torch::Tensor linear_silu_mul(const torch::Tensor& x, const torch::Tensor& gate_up_weight);
torch::Tensor decode_attention(const torch::Tensor& q, const torch::Tensor& k_cache, const torch::Tensor& v_cache,
                               const torch::Tensor& positions, std::int64_t visible);
// decode_attention over a paged cache: pools (blocks, block_size, kv_heads, head_dim), row b's
// positions 0.. in the blocks block_table[b] lists (operators.h: paged_decode_attention).
torch::Tensor paged_decode_attention(const torch::Tensor& q, const torch::Tensor& k_pool, const torch::Tensor& v_pool,
                                     const torch::Tensor& block_table, const torch::Tensor& positions,
                                     std::int64_t visible);
// decode_attention with the step's additive mask (batch, 1, tokens, visible) already made (0 where a
// key is visible, −inf after), which a decoding step makes once for all its layers.
torch::Tensor decode_attention_masked(const torch::Tensor& q, const torch::Tensor& k_cache,
                                      const torch::Tensor& v_cache, const torch::Tensor& additive_mask,
                                      std::int64_t visible);
// The additive mask of decode_attention_masked, in `like`'s type.
torch::Tensor decode_mask(const torch::Tensor& positions, std::int64_t visible, const torch::TensorOptions& like);
torch::Tensor cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets);
torch::Tensor batch_norm_act(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                             const torch::Tensor& running_mean, const torch::Tensor& running_var,
                             const torch::Tensor& residual, Activation act, bool training, double momentum, double eps);
// act(y + residual) (residual undefined: no add): what batch_norm_act does after the norm.
torch::Tensor add_activate(const torch::Tensor& y, const torch::Tensor& residual, Activation act);
void master_adam_step(const torch::Tensor& master, const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq,
                      const torch::Tensor& grad, const torch::Tensor& weight, const MasterAdamStep& step,
                      const torch::Tensor& grad_divisor);
torch::Tensor max_pool2d(const torch::Tensor& x, std::int64_t kernel, std::int64_t stride, std::int64_t padding);

}  // namespace xpuperf::ops::composite
