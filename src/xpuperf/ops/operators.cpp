#include "xpuperf/ops/operators.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>

#include "xpuperf/ops/composite.h"

namespace xpuperf::ops {

namespace {

using OptionalTensor = c10::optional<torch::Tensor>;

torch::Tensor value_of(const OptionalTensor& t) {
  return t.has_value() ? *t : torch::Tensor();
}
OptionalTensor optional_of(const torch::Tensor& t) {
  return t.defined() ? OptionalTensor(t) : OptionalTensor();
}
std::optional<torch::ScalarType> std_optional(const c10::optional<torch::ScalarType>& t) {
  return t.has_value() ? std::optional<torch::ScalarType>(*t) : std::nullopt;
}
c10::optional<torch::ScalarType> c10_optional(const std::optional<torch::ScalarType>& t) {
  return t.has_value() ? c10::optional<torch::ScalarType>(*t) : c10::nullopt;
}

// The schemas' signatures, as kernels registered for them take their arguments.
using AddRmsNorm = std::tuple<torch::Tensor, torch::Tensor>(const torch::Tensor&, const OptionalTensor&,
                                                            const torch::Tensor&, double,
                                                            c10::optional<torch::ScalarType>);
using AddLayerNorm = std::tuple<torch::Tensor, torch::Tensor>(const torch::Tensor&, const OptionalTensor&,
                                                              const torch::Tensor&, const OptionalTensor&, double,
                                                              double, c10::optional<torch::ScalarType>);
using AddLayerNormWithCopy = std::tuple<torch::Tensor, torch::Tensor, torch::Tensor>(
    const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, double, double);
using BiasGelu = torch::Tensor(const torch::Tensor&, const torch::Tensor&, bool);
using Unary = torch::Tensor(const torch::Tensor&);
using Binary = torch::Tensor(const torch::Tensor&, const torch::Tensor&);
using RotaryQkvSig = std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, bool>(
    const torch::Tensor&, std::int64_t, std::int64_t, const torch::Tensor&, const torch::Tensor&, const OptionalTensor&,
    const OptionalTensor&, const OptionalTensor&, const OptionalTensor&, bool);
using LinearRotaryQkvSig = std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, bool>(
    const torch::Tensor&, const torch::Tensor&, std::int64_t, std::int64_t, std::int64_t, const torch::Tensor&,
    const torch::Tensor&, const OptionalTensor&, const OptionalTensor&, const OptionalTensor&, const OptionalTensor&,
    bool);
using DecodeAttentionSig = torch::Tensor(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                                         const torch::Tensor&, std::int64_t);
using PagedDecodeAttentionSig = torch::Tensor(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                                              const torch::Tensor&, const torch::Tensor&, std::int64_t);
using CrossEntropySig = torch::Tensor(const torch::Tensor&, const torch::Tensor&, bool);
using BatchNormActSig = torch::Tensor(const torch::Tensor&, const OptionalTensor&, const OptionalTensor&,
                                      const OptionalTensor&, const OptionalTensor&, const OptionalTensor&, std::int64_t,
                                      bool, double, double);
using MaxPoolSig = torch::Tensor(const torch::Tensor&, std::int64_t, std::int64_t, std::int64_t);
using MasterAdamStepSig = void(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                               const torch::Tensor&, double, double, double, double, double, bool, double, double,
                               const OptionalTensor&);

// The composite implementations as the dispatcher calls them. The compound operators call their
// parts through the dispatcher, so that a device with a kernel for a part gets it.
std::tuple<torch::Tensor, torch::Tensor> composite_add_rms_norm(const torch::Tensor& x, const OptionalTensor& delta,
                                                                const torch::Tensor& weight, double eps,
                                                                c10::optional<torch::ScalarType> out_type) {
  return composite::add_rms_norm(x, value_of(delta), weight, eps, std_optional(out_type));
}

std::tuple<torch::Tensor, torch::Tensor> composite_add_layer_norm(const torch::Tensor& x, const OptionalTensor& delta,
                                                                  const torch::Tensor& weight,
                                                                  const OptionalTensor& bias, double eps,
                                                                  double delta_dropout,
                                                                  c10::optional<torch::ScalarType> out_type) {
  return composite::add_layer_norm(x, value_of(delta), weight, value_of(bias), eps, delta_dropout,
                                   std_optional(out_type));
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> composite_add_layer_norm_with_copy(
    const torch::Tensor& x, const torch::Tensor& delta, const torch::Tensor& weight, const torch::Tensor& bias,
    double eps, double delta_dropout) {
  auto [sum, out] = ops::add_layer_norm(x, delta, weight, bias, eps, delta_dropout);
  auto copy = out.to(delta.scalar_type());
  return {std::move(sum), std::move(out), std::move(copy)};
}

torch::Tensor composite_bias_gelu(const torch::Tensor& h, const torch::Tensor& bias, bool erf) {
  return composite::bias_gelu(h, bias, erf);
}
torch::Tensor composite_argmax(const torch::Tensor& x) {
  return composite::argmax(x);
}
torch::Tensor composite_silu_mul(const torch::Tensor& gate_up) {
  return composite::silu_mul(gate_up);
}
torch::Tensor composite_silu_mul_pair(const torch::Tensor& gate, const torch::Tensor& up) {
  return composite::silu_mul(gate, up);
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, bool> composite_rotary_qkv(
    const torch::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads, const torch::Tensor& cos,
    const torch::Tensor& sin_signed, const OptionalTensor&, const OptionalTensor&, const OptionalTensor&,
    const OptionalTensor&, bool) {
  auto r = composite::rotary_qkv(qkv, heads, kv_heads, cos, sin_signed);
  return {std::move(r.q), std::move(r.k), std::move(r.v), false};
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, bool> composite_linear_rotary_qkv(
    const torch::Tensor& x, const torch::Tensor& qkv_weight, std::int64_t heads, std::int64_t kv_heads,
    std::int64_t head_dim, const torch::Tensor& cos, const torch::Tensor& sin_signed, const OptionalTensor& k_cache,
    const OptionalTensor& v_cache, const OptionalTensor& slots, const OptionalTensor& positions, bool decoding) {
  const auto qkv = ops::linear(x, qkv_weight).view({x.size(0), x.size(1), heads + 2 * kv_heads, head_dim});
  CacheWrite cache{value_of(k_cache), value_of(v_cache), value_of(slots), value_of(positions), decoding};
  auto r = ops::rotary_qkv(qkv, heads, kv_heads, cos, sin_signed, k_cache.has_value() ? &cache : nullptr);
  return {std::move(r.q), std::move(r.k), std::move(r.v), r.cached};
}

torch::Tensor composite_linear(const torch::Tensor& x, const torch::Tensor& weight) {
  return composite::linear(x, weight);
}
torch::Tensor composite_linear_silu_mul(const torch::Tensor& x, const torch::Tensor& gate_up_weight) {
  return ops::silu_mul(ops::linear(x, gate_up_weight));
}
torch::Tensor composite_decode_attention(const torch::Tensor& q, const torch::Tensor& k_cache,
                                         const torch::Tensor& v_cache, const torch::Tensor& positions,
                                         std::int64_t visible) {
  return composite::decode_attention(q, k_cache, v_cache, positions, visible);
}
torch::Tensor composite_paged_decode_attention(const torch::Tensor& q, const torch::Tensor& k_pool,
                                               const torch::Tensor& v_pool, const torch::Tensor& block_table,
                                               const torch::Tensor& positions, std::int64_t visible) {
  return composite::paged_decode_attention(q, k_pool, v_pool, block_table, positions, visible);
}
torch::Tensor composite_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, bool) {
  return composite::cross_entropy(logits, targets);
}
torch::Tensor composite_batch_norm_act(const torch::Tensor& x, const OptionalTensor& weight, const OptionalTensor& bias,
                                       const OptionalTensor& running_mean, const OptionalTensor& running_var,
                                       const OptionalTensor& residual, std::int64_t act, bool training, double momentum,
                                       double eps) {
  return composite::batch_norm_act(x, value_of(weight), value_of(bias), value_of(running_mean), value_of(running_var),
                                   value_of(residual), static_cast<Activation>(act), training, momentum, eps);
}
torch::Tensor composite_max_pool2d(const torch::Tensor& x, std::int64_t kernel, std::int64_t stride,
                                   std::int64_t padding) {
  return composite::max_pool2d(x, kernel, stride, padding);
}

void composite_master_adam_step(const torch::Tensor& master, const torch::Tensor& exp_avg,
                                const torch::Tensor& exp_avg_sq, const torch::Tensor& grad, const torch::Tensor& weight,
                                double lr, double beta1, double beta2, double eps, double weight_decay, bool decoupled,
                                double bias_correction1, double bias_correction2_sqrt,
                                const OptionalTensor& grad_divisor) {
  composite::master_adam_step(master, exp_avg, exp_avg_sq, grad, weight,
                              {lr, beta1, beta2, eps, weight_decay, decoupled, bias_correction1, bias_correction2_sqrt},
                              value_of(grad_divisor));
}

template <typename Signature>
c10::TypedOperatorHandle<Signature> typed(const char* name, const char* overload = "") {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload).typed<Signature>();
}

// The dispatch keys of a device type's kernels: (the device's, its autograd key).
std::optional<std::pair<c10::DispatchKey, c10::DispatchKey>> keys_of(c10::DeviceType device) {
  switch (device) {
    case c10::DeviceType::CPU:
      return std::make_pair(c10::DispatchKey::CPU, c10::DispatchKey::AutogradCPU);
    case c10::DeviceType::CUDA:
      return std::make_pair(c10::DispatchKey::CUDA, c10::DispatchKey::AutogradCUDA);
    case c10::DeviceType::PrivateUse1:
      return std::make_pair(c10::DispatchKey::PrivateUse1, c10::DispatchKey::AutogradPrivateUse1);
    default:
      return std::nullopt;
  }
}

bool registered(const c10::OperatorHandle& op, c10::DeviceType device, bool training) {
  const auto keys = keys_of(device);
  if (!keys) return false;
  return op.hasKernelForDispatchKey(training ? keys->second : keys->first);
}

// How a call reaches its implementation:
//  - BelowAutograd: autograd does not record it (no grad mode, or no input requires a gradient):
//    past the autograd keys, straight to the device's kernel (a forward kernel registered for the
//    device's key alone has no autograd kernel to pass through) or the composite operator;
//  - Composite: autograd records, and the device's kernel is a forward kernel: the composite
//    operator, whose ATen operators record the backward;
//  - Dispatch: autograd records, through the device's autograd kernel or the composite operator.
enum class Route { BelowAutograd, Composite, Dispatch };

Route route(const c10::OperatorHandle& op, std::initializer_list<torch::Tensor> tensors) {
  if (!torch::GradMode::is_enabled()) return Route::BelowAutograd;
  bool records = false;
  c10::DeviceType device = c10::DeviceType::CPU;
  for (const auto& t : tensors)
    if (t.defined()) {
      device = t.device().type();
      records = records || t.requires_grad();
    }
  if (!records) return Route::BelowAutograd;
  return registered(op, device, false) && !registered(op, device, true) ? Route::Composite : Route::Dispatch;
}

// `op.call(args...)` along its route, `composite()` where that is the composite operator.
template <typename Signature, typename Composite, typename... Args>
auto call(const c10::TypedOperatorHandle<Signature>& op, std::initializer_list<torch::Tensor> tensors,
          Composite&& composite, Args&&... args) {
  switch (route(op, tensors)) {
    case Route::Composite:
      return composite();
    case Route::BelowAutograd: {
      const at::AutoDispatchBelowAutograd below_autograd;
      return op.call(std::forward<Args>(args)...);
    }
    case Route::Dispatch:
      break;
  }
  return op.call(std::forward<Args>(args)...);
}

RotatedQkv rotated(std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, bool>&& r) {
  return {std::move(std::get<0>(r)), std::move(std::get<1>(r)), std::move(std::get<2>(r)), std::get<3>(r)};
}

}  // namespace

TORCH_LIBRARY(xpuperf, m) {
  m.def(
      "add_rms_norm(Tensor x, Tensor? delta, Tensor weight, float eps, ScalarType? out_type=None) -> (Tensor, Tensor)");
  m.def(
      "add_layer_norm(Tensor x, Tensor? delta, Tensor weight, Tensor? bias, float eps, float delta_dropout=0, "
      "ScalarType? out_type=None) -> (Tensor, Tensor)");
  m.def(
      "add_layer_norm_with_copy(Tensor x, Tensor delta, Tensor weight, Tensor bias, float eps, "
      "float delta_dropout=0) -> (Tensor, Tensor, Tensor)");
  m.def("bias_gelu(Tensor h, Tensor bias, bool erf=False) -> Tensor");
  m.def("argmax(Tensor x) -> Tensor");
  m.def("silu_mul(Tensor gate_up) -> Tensor");
  m.def("silu_mul.pair(Tensor gate, Tensor up) -> Tensor");
  m.def(
      "rotary_qkv(Tensor qkv, int heads, int kv_heads, Tensor cos, Tensor sin_signed, Tensor(a!)? k_cache=None, "
      "Tensor(b!)? v_cache=None, Tensor? slots=None, Tensor? positions=None, bool decoding=False) "
      "-> (Tensor, Tensor, Tensor, bool)");
  m.def(
      "linear_rotary_qkv(Tensor x, Tensor qkv_weight, int heads, int kv_heads, int head_dim, Tensor cos, "
      "Tensor sin_signed, Tensor(a!)? k_cache=None, Tensor(b!)? v_cache=None, Tensor? slots=None, "
      "Tensor? positions=None, bool decoding=False) -> (Tensor, Tensor, Tensor, bool)");
  m.def("linear(Tensor x, Tensor weight) -> Tensor");
  m.def("linear_silu_mul(Tensor x, Tensor gate_up_weight) -> Tensor");
  m.def("decode_attention(Tensor q, Tensor k_cache, Tensor v_cache, Tensor positions, int visible) -> Tensor");
  m.def(
      "paged_decode_attention(Tensor q, Tensor k_pool, Tensor v_pool, Tensor block_table, Tensor positions, "
      "int visible) -> Tensor");
  m.def("cross_entropy(Tensor logits, Tensor targets, bool gradient_in_logits=False) -> Tensor");
  m.def(
      "batch_norm_act(Tensor x, Tensor? weight, Tensor? bias, Tensor(a!)? running_mean, Tensor(b!)? running_var, "
      "Tensor? residual, int act, bool training, float momentum, float eps) -> Tensor");
  m.def("max_pool2d(Tensor x, int kernel, int stride, int padding) -> Tensor");
  m.def(
      "master_adam_step(Tensor(a!) master, Tensor(b!) exp_avg, Tensor(c!) exp_avg_sq, Tensor grad, Tensor(d!) weight, "
      "float lr, float beta1, float beta2, float eps, float weight_decay, bool decoupled, float bias_correction1, "
      "float bias_correction2_sqrt, Tensor? grad_divisor=None) -> ()");
}

TORCH_LIBRARY_IMPL(xpuperf, CompositeImplicitAutograd, m) {
  m.impl("add_rms_norm", &composite_add_rms_norm);
  m.impl("add_layer_norm", &composite_add_layer_norm);
  m.impl("add_layer_norm_with_copy", &composite_add_layer_norm_with_copy);
  m.impl("bias_gelu", &composite_bias_gelu);
  m.impl("argmax", &composite_argmax);
  m.impl("silu_mul", &composite_silu_mul);
  m.impl("silu_mul.pair", &composite_silu_mul_pair);
  m.impl("rotary_qkv", &composite_rotary_qkv);
  m.impl("linear_rotary_qkv", &composite_linear_rotary_qkv);
  m.impl("linear", &composite_linear);
  m.impl("linear_silu_mul", &composite_linear_silu_mul);
  m.impl("decode_attention", &composite_decode_attention);
  m.impl("paged_decode_attention", &composite_paged_decode_attention);
  m.impl("cross_entropy", &composite_cross_entropy);
  m.impl("batch_norm_act", &composite_batch_norm_act);
  m.impl("max_pool2d", &composite_max_pool2d);
  m.impl("master_adam_step", &composite_master_adam_step);
}

const std::vector<std::string_view>& operator_names() {
  static const std::vector<std::string_view> names = {"add_rms_norm",
                                                      "add_layer_norm",
                                                      "add_layer_norm_with_copy",
                                                      "bias_gelu",
                                                      "argmax",
                                                      "silu_mul",
                                                      "silu_mul.pair",
                                                      "rotary_qkv",
                                                      "linear_rotary_qkv",
                                                      "linear",
                                                      "linear_silu_mul",
                                                      "decode_attention",
                                                      "paged_decode_attention",
                                                      "cross_entropy",
                                                      "batch_norm_act",
                                                      "max_pool2d",
                                                      "master_adam_step"};
  return names;
}

bool has_kernel(std::string_view op, c10::DeviceType device, bool training) {
  // The operators' handles, looked up by name once: the models ask at every forward.
  static const auto handles = [] {
    std::map<std::string, c10::OperatorHandle, std::less<>> found;
    for (const auto name : operator_names()) {
      const auto dot = name.find('.');
      const std::string overload = dot == std::string_view::npos ? "" : std::string(name.substr(dot + 1));
      if (const auto handle =
              c10::Dispatcher::singleton().findSchema({"xpuperf::" + std::string(name.substr(0, dot)), overload}))
        found.emplace(std::string(name), *handle);
    }
    return found;
  }();
  const auto it = handles.find(op);
  return it != handles.end() && registered(it->second, device, training);
}

bool device_has_kernels(c10::DeviceType device) {
  for (const auto& op : operator_names())
    if (has_kernel(op, device)) return true;
  return false;
}

bool kernel_listed(const char* list, const char* name) {
  const std::string_view wanted(name);
  std::string_view rest(list);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    auto item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == wanted) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

bool switched_off(const char* name) {
  static const char* const list = std::getenv("XPUPERF_KERNELS_OFF");
  return list != nullptr && kernel_listed(list, name);
}

// The dispatching functions, each along its route (call above).

std::tuple<torch::Tensor, torch::Tensor> add_rms_norm(const torch::Tensor& x, const torch::Tensor& delta,
                                                      const torch::Tensor& weight, double eps,
                                                      std::optional<torch::ScalarType> out_type) {
  static const auto op = typed<AddRmsNorm>("xpuperf::add_rms_norm");
  return call(
      op, {x, delta, weight}, [&] { return composite::add_rms_norm(x, delta, weight, eps, out_type); }, x,
      optional_of(delta), weight, eps, c10_optional(out_type));
}

std::tuple<torch::Tensor, torch::Tensor> add_layer_norm(const torch::Tensor& x, const torch::Tensor& delta,
                                                        const torch::Tensor& weight, const torch::Tensor& bias,
                                                        double eps, double delta_dropout,
                                                        std::optional<torch::ScalarType> out_type) {
  static const auto op = typed<AddLayerNorm>("xpuperf::add_layer_norm");
  return call(
      op, {x, delta, weight, bias},
      [&] { return composite::add_layer_norm(x, delta, weight, bias, eps, delta_dropout, out_type); }, x,
      optional_of(delta), weight, optional_of(bias), eps, delta_dropout, c10_optional(out_type));
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> add_layer_norm_with_copy(const torch::Tensor& x,
                                                                                 const torch::Tensor& delta,
                                                                                 const torch::Tensor& weight,
                                                                                 const torch::Tensor& bias, double eps,
                                                                                 double delta_dropout) {
  TORCH_CHECK(delta.defined() && bias.defined(), "xpuperf::add_layer_norm_with_copy: needs delta and the bias");
  static const auto op = typed<AddLayerNormWithCopy>("xpuperf::add_layer_norm_with_copy");
  return call(
      op, {x, delta, weight, bias},
      [&] { return composite::add_layer_norm_with_copy(x, delta, weight, bias, eps, delta_dropout); }, x, delta, weight,
      bias, eps, delta_dropout);
}

torch::Tensor bias_gelu(const torch::Tensor& h, const torch::Tensor& bias, bool erf) {
  static const auto op = typed<BiasGelu>("xpuperf::bias_gelu");
  return call(
      op, {h, bias}, [&] { return composite::bias_gelu(h, bias, erf); }, h, bias, erf);
}

torch::Tensor argmax(const torch::Tensor& x) {
  static const auto op = typed<Unary>("xpuperf::argmax");
  return call(
      op, {x}, [&] { return composite::argmax(x); }, x);
}

torch::Tensor silu_mul(const torch::Tensor& gate_up) {
  static const auto op = typed<Unary>("xpuperf::silu_mul");
  return call(
      op, {gate_up}, [&] { return composite::silu_mul(gate_up); }, gate_up);
}

torch::Tensor silu_mul(const torch::Tensor& gate, const torch::Tensor& up) {
  static const auto op = typed<Binary>("xpuperf::silu_mul", "pair");
  return call(
      op, {gate, up}, [&] { return composite::silu_mul(gate, up); }, gate, up);
}

RotatedQkv rotary_qkv(const torch::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads, const torch::Tensor& cos,
                      const torch::Tensor& sin_signed, const CacheWrite* cache) {
  static const auto op = typed<RotaryQkvSig>("xpuperf::rotary_qkv");
  const auto composite = [&] {
    auto r = composite::rotary_qkv(qkv, heads, kv_heads, cos, sin_signed);
    return std::make_tuple(std::move(r.q), std::move(r.k), std::move(r.v), false);
  };
  if (!cache)
    return rotated(call(op, {qkv, cos, sin_signed}, composite, qkv, heads, kv_heads, cos, sin_signed, OptionalTensor(),
                        OptionalTensor(), OptionalTensor(), OptionalTensor(), false));
  return rotated(call(op, {qkv, cos, sin_signed}, composite, qkv, heads, kv_heads, cos, sin_signed,
                      optional_of(cache->k_cache), optional_of(cache->v_cache), optional_of(cache->slots),
                      optional_of(cache->positions), cache->decoding));
}

RotatedQkv linear_rotary_qkv(const torch::Tensor& x, const torch::Tensor& qkv_weight, std::int64_t heads,
                             std::int64_t kv_heads, std::int64_t head_dim, const torch::Tensor& cos,
                             const torch::Tensor& sin_signed, const CacheWrite* cache) {
  static const auto op = typed<LinearRotaryQkvSig>("xpuperf::linear_rotary_qkv");
  // Where the device's kernel is for forwards only: its parts, each along its own route.
  const auto parts = [&] {
    const auto qkv = ops::linear(x, qkv_weight).view({x.size(0), x.size(1), heads + 2 * kv_heads, head_dim});
    auto r = ops::rotary_qkv(qkv, heads, kv_heads, cos, sin_signed, cache);
    return std::make_tuple(std::move(r.q), std::move(r.k), std::move(r.v), r.cached);
  };
  if (!cache)
    return rotated(call(op, {x, qkv_weight}, parts, x, qkv_weight, heads, kv_heads, head_dim, cos, sin_signed,
                        OptionalTensor(), OptionalTensor(), OptionalTensor(), OptionalTensor(), false));
  return rotated(call(op, {x, qkv_weight}, parts, x, qkv_weight, heads, kv_heads, head_dim, cos, sin_signed,
                      optional_of(cache->k_cache), optional_of(cache->v_cache), optional_of(cache->slots),
                      optional_of(cache->positions), cache->decoding));
}

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight) {
  static const auto op = typed<Binary>("xpuperf::linear");
  return call(
      op, {x, weight}, [&] { return composite::linear(x, weight); }, x, weight);
}

torch::Tensor linear_silu_mul(const torch::Tensor& x, const torch::Tensor& gate_up_weight) {
  static const auto op = typed<Binary>("xpuperf::linear_silu_mul");
  return call(
      op, {x, gate_up_weight}, [&] { return ops::silu_mul(ops::linear(x, gate_up_weight)); }, x, gate_up_weight);
}

torch::Tensor decode_attention(const torch::Tensor& q, const torch::Tensor& k_cache, const torch::Tensor& v_cache,
                               const torch::Tensor& positions, std::int64_t visible) {
  static const auto op = typed<DecodeAttentionSig>("xpuperf::decode_attention");
  return call(
      op, {q, k_cache, v_cache}, [&] { return composite::decode_attention(q, k_cache, v_cache, positions, visible); },
      q, k_cache, v_cache, positions, visible);
}

torch::Tensor paged_decode_attention(const torch::Tensor& q, const torch::Tensor& k_pool, const torch::Tensor& v_pool,
                                     const torch::Tensor& block_table, const torch::Tensor& positions,
                                     std::int64_t visible) {
  static const auto op = typed<PagedDecodeAttentionSig>("xpuperf::paged_decode_attention");
  return call(
      op, {q, k_pool, v_pool},
      [&] { return composite::paged_decode_attention(q, k_pool, v_pool, block_table, positions, visible); }, q, k_pool,
      v_pool, block_table, positions, visible);
}

torch::Tensor cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, bool gradient_in_logits) {
  static const auto op = typed<CrossEntropySig>("xpuperf::cross_entropy");
  return call(
      op, {logits}, [&] { return composite::cross_entropy(logits, targets); }, logits, targets, gradient_in_logits);
}

torch::Tensor batch_norm_act(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                             const torch::Tensor& running_mean, const torch::Tensor& running_var,
                             const torch::Tensor& residual, Activation act, bool training, double momentum,
                             double eps) {
  static const auto op = typed<BatchNormActSig>("xpuperf::batch_norm_act");
  return call(
      op, {x, weight, bias, residual},
      [&] {
        return composite::batch_norm_act(x, weight, bias, running_mean, running_var, residual, act, training, momentum,
                                         eps);
      },
      x, optional_of(weight), optional_of(bias), optional_of(running_mean), optional_of(running_var),
      optional_of(residual), static_cast<std::int64_t>(act), training, momentum, eps);
}

torch::Tensor max_pool2d(const torch::Tensor& x, std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
  static const auto op = typed<MaxPoolSig>("xpuperf::max_pool2d");
  return call(
      op, {x}, [&] { return composite::max_pool2d(x, kernel, stride, padding); }, x, kernel, stride, padding);
}

void master_adam_step(const torch::Tensor& master, const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq,
                      const torch::Tensor& grad, const torch::Tensor& weight, const MasterAdamStep& step,
                      const torch::Tensor& grad_divisor) {
  static const auto op = typed<MasterAdamStepSig>("xpuperf::master_adam_step");
  // An optimizer's step: autograd records none of it.
  const at::AutoDispatchBelowAutograd below_autograd;
  op.call(master, exp_avg, exp_avg_sq, grad, weight, step.lr, step.beta1, step.beta2, step.eps, step.weight_decay,
          step.decoupled, step.bias_correction1, step.bias_correction2_sqrt, optional_of(grad_divisor));
}

}  // namespace xpuperf::ops
