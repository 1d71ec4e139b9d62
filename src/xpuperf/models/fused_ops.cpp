#include "xpuperf/models/fused_ops.h"

#include "xpuperf/models/kv_cache.h"
#include "xpuperf/ops/composite.h"
#include "xpuperf/torchrt/compat.h"

namespace xpuperf::models::fused {

namespace {
// Where a step's keys and values go in `layer`'s cache.
ops::CacheWrite cache_write(const KvStep& step, std::int64_t layer) {
  const auto i = static_cast<std::size_t>(layer);
  return {step.cache->k[i], step.cache->v[i], step.slots, step.positions, !step.fresh};
}
}  // namespace

torch::Tensor rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin_signed) {
  return ops::composite::rotary(x, cos, sin_signed);
}

bool kernels_built() {
  return ops::device_has_kernels(c10::DeviceType::CUDA);
}

std::pair<torch::Tensor, torch::Tensor> add_rms_norm(const torch::Tensor& x, const torch::Tensor& delta,
                                                     const torch::Tensor& weight, double eps, bool use_kernels,
                                                     std::optional<torch::ScalarType> out_type) {
  auto [sum, out] = use_kernels ? ops::add_rms_norm(x, delta, weight, eps, out_type)
                                : ops::composite::add_rms_norm(x, delta, weight, eps, out_type);
  return {std::move(sum), std::move(out)};
}

std::pair<torch::Tensor, torch::Tensor> add_layer_norm(const torch::Tensor& x, const torch::Tensor& delta,
                                                       const torch::Tensor& weight, const torch::Tensor& bias,
                                                       double eps, bool use_kernels, double delta_dropout,
                                                       std::optional<torch::ScalarType> out_type) {
  auto [sum, out] = use_kernels ? ops::add_layer_norm(x, delta, weight, bias, eps, delta_dropout, out_type)
                                : ops::composite::add_layer_norm(x, delta, weight, bias, eps, delta_dropout, out_type);
  return {std::move(sum), std::move(out)};
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> add_layer_norm_with_copy(
    const torch::Tensor& x, const torch::Tensor& delta, const torch::Tensor& weight, const torch::Tensor& bias,
    double eps, bool use_kernels, double delta_dropout) {
  return use_kernels ? ops::add_layer_norm_with_copy(x, delta, weight, bias, eps, delta_dropout)
                     : ops::composite::add_layer_norm_with_copy(x, delta, weight, bias, eps, delta_dropout);
}

std::optional<torch::ScalarType> autocast_product_type(const torch::Tensor& x) {
  if (x.scalar_type() != torch::kFloat || !compat::autocast_enabled(x.device().type())) return std::nullopt;
  return compat::autocast_dtype(x.device().type());
}

torch::Tensor bias_gelu(const torch::Tensor& h, const torch::Tensor& bias, bool use_kernels, Gelu form) {
  const auto b = bias.scalar_type() == h.scalar_type() ? bias : bias.to(h.scalar_type());
  const bool erf = form == Gelu::Erf;
  return use_kernels ? ops::bias_gelu(h, b, erf) : ops::composite::bias_gelu(h, b, erf);
}

torch::Tensor argmax(const torch::Tensor& x, bool use_kernels) {
  return use_kernels ? ops::argmax(x) : ops::composite::argmax(x);
}

torch::Tensor silu_mul(const torch::Tensor& gate, const torch::Tensor& up, bool use_kernels) {
  return use_kernels ? ops::silu_mul(gate, up) : ops::composite::silu_mul(gate, up);
}

torch::Tensor silu_mul(const torch::Tensor& gate_up, bool use_kernels) {
  return use_kernels ? ops::silu_mul(gate_up) : ops::composite::silu_mul(gate_up);
}

RotatedQkv linear_rotary_qkv(const torch::Tensor& x, const torch::Tensor& qkv_weight, std::int64_t heads,
                             std::int64_t kv_heads, std::int64_t head_dim, const torch::Tensor& cos,
                             const torch::Tensor& sin_signed, const KvStep* step, std::int64_t layer,
                             bool use_kernels) {
  if (use_kernels) {
    if (!step || step->paged) return ops::linear_rotary_qkv(x, qkv_weight, heads, kv_heads, head_dim, cos, sin_signed);
    const auto cache = cache_write(*step, layer);
    return ops::linear_rotary_qkv(x, qkv_weight, heads, kv_heads, head_dim, cos, sin_signed, &cache);
  }
  const auto qkv = ops::composite::linear(x, qkv_weight).view({x.size(0), x.size(1), heads + 2 * kv_heads, head_dim});
  return ops::composite::rotary_qkv(qkv, heads, kv_heads, cos, sin_signed);
}

RotatedQkv rotary_qkv(const torch::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads, const torch::Tensor& cos,
                      const torch::Tensor& sin_signed, const KvStep* step, std::int64_t layer, bool use_kernels) {
  if (!use_kernels) return ops::composite::rotary_qkv(qkv, heads, kv_heads, cos, sin_signed);
  if (!step || step->paged) return ops::rotary_qkv(qkv, heads, kv_heads, cos, sin_signed);
  const auto cache = cache_write(*step, layer);
  return ops::rotary_qkv(qkv, heads, kv_heads, cos, sin_signed, &cache);
}

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, bool use_kernels) {
  return use_kernels ? ops::linear(x, weight) : ops::composite::linear(x, weight);
}

torch::Tensor linear_silu_mul(const torch::Tensor& x, const torch::Tensor& gate_up_weight, bool use_kernels) {
  return use_kernels ? ops::linear_silu_mul(x, gate_up_weight) : ops::composite::linear_silu_mul(x, gate_up_weight);
}

std::optional<torch::Tensor> decode_attention(const torch::Tensor& q, const KvStep& step, std::int64_t layer) {
  // Without a kernel on this device the caller's attention reads the step's mask, made once for all
  // its layers, where the composite operator would make it a layer at a time.
  if (step.paged || step.fresh || step.visible <= 0 || !ops::has_kernel("decode_attention", q.device().type()))
    return std::nullopt;
  const auto i = static_cast<std::size_t>(layer);
  return ops::decode_attention(q, step.cache->k[i], step.cache->v[i], step.positions, step.visible);
}

torch::Tensor cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, bool use_kernels,
                            bool gradient_in_logits) {
  return use_kernels ? ops::cross_entropy(logits, targets, gradient_in_logits)
                     : ops::composite::cross_entropy(logits, targets);
}

}  // namespace xpuperf::models::fused
