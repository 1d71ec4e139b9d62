#include "xpuperf/ops/composite.h"

#include <cmath>

#include "xpuperf/torchrt/compat.h"

namespace xpuperf::ops::composite {

namespace {
torch::Tensor cast_to(const torch::Tensor& t, std::optional<torch::ScalarType> type) {
  return type && *type != t.scalar_type() ? t.to(*type) : t;
}
}  // namespace

std::tuple<torch::Tensor, torch::Tensor> add_rms_norm(const torch::Tensor& x, const torch::Tensor& delta,
                                                      const torch::Tensor& weight, double eps,
                                                      std::optional<torch::ScalarType> out_type) {
  const auto sum = delta.defined() ? x + delta : x;
  return {sum, cast_to(compat::rms_norm(sum, weight, eps), out_type)};
}

std::tuple<torch::Tensor, torch::Tensor> add_layer_norm(const torch::Tensor& x, const torch::Tensor& delta,
                                                        const torch::Tensor& weight, const torch::Tensor& bias,
                                                        double eps, double delta_dropout,
                                                        std::optional<torch::ScalarType> out_type) {
  const auto dropped =
      delta.defined() && delta_dropout > 0 ? torch::dropout(delta, delta_dropout, /*train=*/true) : delta;
  const auto sum = dropped.defined() ? x + dropped : x;
  return {sum, cast_to(torch::layer_norm(sum, {sum.size(-1)}, weight, bias, eps), out_type)};
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> add_layer_norm_with_copy(const torch::Tensor& x,
                                                                                 const torch::Tensor& delta,
                                                                                 const torch::Tensor& weight,
                                                                                 const torch::Tensor& bias, double eps,
                                                                                 double delta_dropout) {
  TORCH_CHECK(delta.defined() && bias.defined(), "xpuperf::add_layer_norm_with_copy: needs delta and the bias");
  auto [sum, out] = add_layer_norm(x, delta, weight, bias, eps, delta_dropout);
  auto copy = out.to(delta.scalar_type());
  return {std::move(sum), std::move(out), std::move(copy)};
}

torch::Tensor bias_gelu(const torch::Tensor& h, const torch::Tensor& bias, bool erf) {
  return torch::gelu(h + cast_to(bias, h.scalar_type()), erf ? "none" : "tanh");
}

torch::Tensor argmax(const torch::Tensor& x) {
  return x.argmax(-1);
}

torch::Tensor silu_mul(const torch::Tensor& gate_up) {
  const auto width = gate_up.size(-1) / 2;
  return torch::silu(gate_up.narrow(-1, 0, width)) * gate_up.narrow(-1, width, width);
}

torch::Tensor silu_mul(const torch::Tensor& gate, const torch::Tensor& up) {
  return torch::silu(gate) * up;
}

torch::Tensor rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin_signed) {
  return torch::addcmul(x * cos, torch::roll(x, x.size(-1) / 2, -1), sin_signed);
}

RotatedQkv rotary_qkv(const torch::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads, const torch::Tensor& cos,
                      const torch::Tensor& sin_signed) {
  const auto qk = rotary(qkv.narrow(2, 0, heads + kv_heads), cos, sin_signed);  // q and k rotated together
  return {qk.narrow(2, 0, heads), qk.narrow(2, heads, kv_heads), qkv.narrow(2, heads + kv_heads, kv_heads), false};
}

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight) {
  return torch::nn::functional::linear(x, weight);
}

torch::Tensor linear_silu_mul(const torch::Tensor& x, const torch::Tensor& gate_up_weight) {
  return composite::silu_mul(composite::linear(x, gate_up_weight));
}

torch::Tensor decode_mask(const torch::Tensor& positions, std::int64_t visible, const torch::TensorOptions& like) {
  const auto batch = positions.size(0), tokens = positions.size(1);
  const auto after =
      torch::arange(visible, positions.options()).view({1, 1, 1, visible}) > positions.view({batch, 1, tokens, 1});
  return torch::zeros({batch, 1, tokens, visible}, like).masked_fill(after, -INFINITY);
}

torch::Tensor decode_attention_masked(const torch::Tensor& q, const torch::Tensor& k_cache,
                                      const torch::Tensor& v_cache, const torch::Tensor& additive_mask,
                                      std::int64_t visible) {
  const auto batch = q.size(0), heads = q.size(1), tokens = q.size(2), dim = q.size(3);
  const auto kv_heads = k_cache.size(2);
  TORCH_CHECK(heads % kv_heads == 0, "attention: ", heads, " query heads are not a multiple of ", kv_heads,
              " key/value heads");
  const auto group = heads / kv_heads;
  // A group's query heads share their key/value head: stacked as that head's queries.
  const auto read = [&](const torch::Tensor& cache) {
    return cache.narrow(0, 0, batch).narrow(1, 0, visible).transpose(1, 2);
  };
  // One token a row (decoding): the row's mask holds for all its group's stacked queries as it is.
  const auto bias = tokens == 1 ? additive_mask
                                : additive_mask.unsqueeze(2)
                                      .expand({batch, 1, group, tokens, visible})
                                      .reshape({batch, 1, group * tokens, visible});
  const auto out = compat::attention(q.reshape({batch, kv_heads, group * tokens, dim}), read(k_cache), read(v_cache),
                                     0.0, false, /*causal=*/false, bias);
  // reshape, not view: CUDA's attention kernels may return (batch, tokens, heads, dim) transposed.
  return out.reshape({batch, heads, tokens, dim});
}

torch::Tensor decode_attention(const torch::Tensor& q, const torch::Tensor& k_cache, const torch::Tensor& v_cache,
                               const torch::Tensor& positions, std::int64_t visible) {
  return decode_attention_masked(q, k_cache, v_cache, decode_mask(positions, visible, k_cache.options()), visible);
}

torch::Tensor paged_decode_attention(const torch::Tensor& q, const torch::Tensor& k_pool, const torch::Tensor& v_pool,
                                     const torch::Tensor& block_table, const torch::Tensor& positions,
                                     std::int64_t visible) {
  const auto block = k_pool.size(1), batch = q.size(0);
  // Row b's key j: block block_table[b][j / block], place j % block; gathered as a cache of
  // `batch` slots of `visible` keys, which decode_attention reads.
  const auto j = torch::arange(visible, block_table.options());
  const auto rows = block_table.index_select(1, torch::div(j, block, "floor")) * block + torch::remainder(j, block);
  const auto gather = [&](const torch::Tensor& pool) {
    return pool.reshape({-1, pool.size(2), pool.size(3)})
        .index_select(0, rows.reshape({-1}))
        .view({batch, visible, pool.size(2), pool.size(3)});
  };
  return decode_attention(q, gather(k_pool), gather(v_pool), positions, visible);
}

torch::Tensor cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets) {
  return torch::nn::functional::nll_loss(torch::log_softmax(logits, -1, torch::kFloat), targets);
}

torch::Tensor batch_norm_act(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                             const torch::Tensor& running_mean, const torch::Tensor& running_var,
                             const torch::Tensor& residual, Activation act, bool training, double momentum,
                             double eps) {
  // As torch::nn::BatchNorm2d's forward calls it.
  return add_activate(torch::batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps,
                                        at::globalContext().userEnabledCuDNN()),
                      residual, act);
}

torch::Tensor add_activate(const torch::Tensor& normed, const torch::Tensor& residual, Activation act) {
  const auto y = residual.defined() ? normed + residual : normed;
  switch (act) {
    case Activation::Relu:
      return torch::relu(y);
    case Activation::Relu6:
      return torch::nn::functional::relu6(y);
    case Activation::None:
      break;
  }
  return y;
}

void master_adam_step(const torch::Tensor& master, const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq,
                      const torch::Tensor& grad, const torch::Tensor& weight, const MasterAdamStep& step,
                      const torch::Tensor& grad_divisor) {
  // torch::optim's Adam / AdamW arithmetic, as the training runtime's multi-tensor step does it.
  auto g = grad.to(torch::kFloat);
  if (grad_divisor.defined()) g = g / grad_divisor.to(torch::kFloat);
  if (step.weight_decay != 0) {
    if (step.decoupled)
      master.mul_(1.0 - step.lr * step.weight_decay);
    else
      g = g + master * step.weight_decay;
  }
  exp_avg.mul_(step.beta1).add_(g, 1.0 - step.beta1);
  exp_avg_sq.mul_(step.beta2).addcmul_(g, g, 1.0 - step.beta2);
  const auto denom = (exp_avg_sq.sqrt() / step.bias_correction2_sqrt).add_(step.eps);
  master.addcdiv_(exp_avg, denom, -step.lr / step.bias_correction1);
  weight.copy_(master);
}

torch::Tensor max_pool2d(const torch::Tensor& x, std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
  return torch::max_pool2d(x, kernel, stride, padding);
}

}  // namespace xpuperf::ops::composite
