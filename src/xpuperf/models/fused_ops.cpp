#include "xpuperf/models/fused_ops.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>

#include "xpuperf/models/kv_cache.h"
#include "xpuperf/torchrt/compat.h"

#ifdef XPUPERF_HAVE_TORCH_CUDA
#include <ATen/record_function.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "xpuperf/models/cuda/fused_kernels.h"
#include "xpuperf/models/cuda/kernel_tensors.h"
#include "xpuperf/models/cuda/training_kernels.h"
#endif

namespace xpuperf::models::fused {

torch::Tensor rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin_signed) {
  return torch::addcmul(x * cos, torch::roll(x, x.size(-1) / 2, -1), sin_signed);
}

#ifdef XPUPERF_HAVE_TORCH_CUDA
namespace {

// The kernel keeps a row in shared memory: well under the 48 KiB a block may have without opting in.
constexpr std::int64_t kMaxNormRowBytes = 32 * 1024;

using kernels::aligned;
using kernels::check;
using kernels::element_of;
using kernels::stream_of;

// A contiguous CUDA tensor of the kernels' types, 16-byte aligned, its last dimension whole packs.
bool packable(const torch::Tensor& t, std::int64_t width, kernels::Element& e) {
  return t.is_cuda() && t.is_contiguous() && element_of(t, e) && width % kernels::pack_elements(e) == 0 && aligned(t);
}

// Launches an inference kernel (`launch` returns CUDA's error text or null) as an operator of its own
// to LibTorch's RecordFunction callbacks, so that the op profile (profile_batches) times it between
// CUDA events as it times the ATen operators the kernel replaces; throws on a launch error. (The
// training kernels are timed by profile_steps' Kineto profile, by kernel name.)
template <typename Launch>
void run_kernel(const char* name, Launch&& launch) {
  RECORD_FUNCTION(name, std::vector<c10::IValue>());
  check(launch(), name);
}

// Whether XPUPERF_KERNELS_OFF names the kernel (fused_ops.h: kernel_listed).
bool switched_off(const char* name) {
  static const char* const list = std::getenv("XPUPERF_KERNELS_OFF");
  return list != nullptr && kernel_listed(list, name);
}

// Each kernel_* runs its kernel and returns the result, or nothing when the tensors are not ones
// the kernel takes.

std::optional<std::pair<torch::Tensor, torch::Tensor>> kernel_add_rms_norm(const torch::Tensor& x,
                                                                           const torch::Tensor& delta,
                                                                           const torch::Tensor& weight, double eps) {
  if (switched_off("add_rms_norm")) return std::nullopt;
  const auto width = x.size(-1);
  kernels::Element e{};
  if (packable(x, width, e) && width * x.element_size() <= kMaxNormRowBytes &&
      weight.scalar_type() == x.scalar_type() && weight.is_contiguous() && aligned(weight) && weight.numel() == width &&
      weight.device() == x.device() &&
      (!delta.defined() || (delta.sizes() == x.sizes() && delta.scalar_type() == x.scalar_type() &&
                            delta.is_contiguous() && aligned(delta) && delta.device() == x.device()))) {
    const c10::cuda::CUDAGuard guard(x.device());
    const auto sum = delta.defined() ? torch::empty_like(x) : x;
    auto out = torch::empty_like(x);
    run_kernel("xpuperf::add_rms_norm", [&] {
      return kernels::add_rms_norm(e, x.data_ptr(), delta.defined() ? delta.data_ptr() : nullptr, weight.data_ptr(),
                                   delta.defined() ? sum.data_ptr() : nullptr, out.data_ptr(), x.numel() / width, width,
                                   static_cast<float>(eps), stream_of(x));
    });
    return std::make_pair(sum, out);
  }
  return std::nullopt;
}

std::optional<std::pair<torch::Tensor, torch::Tensor>> kernel_add_layer_norm(const torch::Tensor& x,
                                                                             const torch::Tensor& delta,
                                                                             const torch::Tensor& weight,
                                                                             const torch::Tensor& bias, double eps) {
  if (switched_off("add_layer_norm")) return std::nullopt;
  const auto width = x.size(-1);
  kernels::Element e{};
  const auto like_row = [&](const torch::Tensor& t) {
    return t.defined() && t.scalar_type() == x.scalar_type() && t.is_contiguous() && aligned(t) && t.numel() == width &&
           t.device() == x.device();
  };
  if (!packable(x, width, e) || width * x.element_size() > kMaxNormRowBytes || !like_row(weight) || !like_row(bias) ||
      (delta.defined() && (delta.sizes() != x.sizes() || delta.scalar_type() != x.scalar_type() ||
                           !delta.is_contiguous() || !aligned(delta) || delta.device() != x.device())))
    return std::nullopt;
  const c10::cuda::CUDAGuard guard(x.device());
  const auto sum = delta.defined() ? torch::empty_like(x) : x;
  auto out = torch::empty_like(x);
  run_kernel("xpuperf::add_layer_norm", [&] {
    return kernels::add_layer_norm(e, x.data_ptr(), delta.defined() ? delta.data_ptr() : nullptr, weight.data_ptr(),
                                   bias.data_ptr(), delta.defined() ? sum.data_ptr() : nullptr, out.data_ptr(),
                                   x.numel() / width, width, static_cast<float>(eps), stream_of(x));
  });
  return std::make_pair(sum, out);
}

// The cross entropy's kernels as one autograd function: the row's log-sum-exp is all the backward
// needs besides the logits and targets. With `gradient_in_logits` the backward writes the gradient
// over the logits it kept, which then never coexist with a second tensor of their size.
struct KernelCrossEntropy : torch::autograd::Function<KernelCrossEntropy> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& targets, bool gradient_in_logits) {
    kernels::Element e{};
    element_of(logits, e);
    const c10::cuda::CUDAGuard guard(logits.device());
    const auto rows = logits.size(0), vocab = logits.size(1);
    const auto floats = logits.options().dtype(torch::kFloat);
    auto lse = torch::empty({rows}, floats), losses = torch::empty({rows}, floats);
    check(kernels::cross_entropy_forward(e, logits.data_ptr(), targets.data_ptr<std::int64_t>(), lse.data_ptr<float>(),
                                         losses.data_ptr<float>(), rows, vocab, stream_of(logits)),
          "cross_entropy_forward");
    const auto counted = targets.ne(-100).sum().to(torch::kFloat);
    ctx->save_for_backward({logits, targets, lse, counted});
    ctx->saved_data["gradient_in_logits"] = gradient_in_logits;
    return losses.sum() / counted;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &logits = saved[0], &targets = saved[1], &lse = saved[2], &counted = saved[3];
    kernels::Element e{};
    element_of(logits, e);
    const c10::cuda::CUDAGuard guard(logits.device());
    const auto scale = (grads[0].to(torch::kFloat) / counted).contiguous();
    auto grad = ctx->saved_data["gradient_in_logits"].toBool() ? logits : torch::empty_like(logits);
    check(kernels::cross_entropy_backward(e, logits.data_ptr(), targets.data_ptr<std::int64_t>(), lse.data_ptr<float>(),
                                          scale.data_ptr<float>(), grad.data_ptr(), logits.size(0), logits.size(1),
                                          stream_of(logits)),
          "cross_entropy_backward");
    return {grad, torch::Tensor(), torch::Tensor()};
  }
};

std::optional<torch::Tensor> kernel_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets,
                                                  bool gradient_in_logits) {
  if (switched_off("cross_entropy")) return std::nullopt;
  kernels::Element e{};
  if (logits.dim() != 2 || !packable(logits, logits.size(1), e) || targets.dim() != 1 ||
      targets.size(0) != logits.size(0) || targets.scalar_type() != torch::kLong || targets.device() != logits.device())
    return std::nullopt;
  return KernelCrossEntropy::apply(logits, targets.contiguous(), gradient_in_logits);
}

// The fused dropout's random stream on a device: the seed of the device's default generator (so
// torch::manual_seed makes runs repeat) and the number of the next call, in device memory, which each
// launch reads and the stream then advances (training_kernels.h: DeltaDropout). Created at the first
// use, which must not be inside a CUDA graph's capture (the counter's zeroing would be captured and
// replayed): the runtime's graphs take their first steps eagerly.
struct DropoutStream {
  unsigned long long seed = 0;
  torch::Tensor call;
};

DropoutStream& dropout_stream(const torch::Tensor& x) {
  static std::mutex mutex;
  static auto* streams = new std::map<int, DropoutStream>();  // never freed: CUDA may be gone at exit
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = streams->find(x.device().index());
  if (it == streams->end()) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    TORCH_CHECK(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream_of(x)), &capturing) == cudaSuccess &&
                    capturing == cudaStreamCaptureStatusNone,
                "the fused dropout was first used inside a CUDA graph's capture: run a step eagerly first");
    DropoutStream created{at::globalContext().defaultGenerator(x.device()).current_seed(),
                          torch::zeros({1}, x.options().dtype(torch::kLong))};
    it = streams->emplace(x.device().index(), std::move(created)).first;
  }
  return it->second;
}

// RMSNorm or LayerNorm with the residual add before it, forward and backward as one kernel each
// (models/cuda/training_kernels.h). Inputs x, delta, weight, bias (no delta: no add; a bias only for
// LayerNorm; optionals, as LibTorch's custom functions take no undefined tensor); outputs sum (x +
// delta; x itself without delta, which this function then does not return) and out, of out_type (x's,
// or delta's half type under autocast). `dropout` > 0: sum = x + dropout(delta), the keep
// mask drawn in the forward kernel and kept for backward.
struct KernelAddNorm : torch::autograd::Function<KernelAddNorm> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                                const std::optional<torch::Tensor>& delta, const torch::Tensor& weight,
                                                const std::optional<torch::Tensor>& bias, double eps, double dropout,
                                                torch::ScalarType out_type, bool low_copy) {
    const bool has_delta = delta.has_value(), layer = bias.has_value();
    const bool low = low_copy && has_delta && layer;
    const bool drops = has_delta && dropout > 0;
    kernels::Element xe{}, de{}, oe{};
    element_of(x, xe);
    element_of(out_type, oe);
    // Without delta, delta's type names the output's when it is not x's (training_kernels.h).
    de = xe == oe ? xe : oe;
    if (has_delta) element_of(*delta, de);
    const c10::cuda::CUDAGuard guard(x.device());
    const auto width = x.size(-1), rows = x.numel() / width;
    const auto sum = has_delta ? torch::empty_like(x) : x;
    auto out = torch::empty(x.sizes(), x.options().dtype(out_type));
    const auto out_low = low ? torch::empty(x.sizes(), x.options().dtype(delta->scalar_type())) : torch::Tensor();
    auto rstd = torch::empty({rows}, x.options().dtype(torch::kFloat));
    auto mean = layer ? torch::empty({rows}, x.options().dtype(torch::kFloat)) : rstd;
    const void* delta_data = has_delta ? delta->data_ptr() : nullptr;
    void* sum_data = has_delta ? sum.data_ptr() : nullptr;
    torch::Tensor keep;
    kernels::DeltaDropout drop;
    DropoutStream* rng = nullptr;
    if (drops) {
      rng = &dropout_stream(x);
      keep = torch::empty(delta->sizes(), x.options().dtype(torch::kByte));
      drop = {static_cast<float>(dropout), rng->seed, rng->call.data_ptr<std::int64_t>(),
              keep.data_ptr<std::uint8_t>()};
    }
    if (layer)
      check(kernels::layer_norm_forward(xe, de, oe, x.data_ptr(), delta_data, weight.data_ptr(), bias->data_ptr(),
                                        sum_data, out.data_ptr(), low ? out_low.data_ptr() : nullptr,
                                        mean.data_ptr<float>(), rstd.data_ptr<float>(), rows, width,
                                        static_cast<float>(eps), drops ? &drop : nullptr, stream_of(x)),
            "layer_norm_forward");
    else
      check(kernels::rms_norm_forward(xe, de, oe, x.data_ptr(), delta_data, weight.data_ptr(), sum_data, out.data_ptr(),
                                      rstd.data_ptr<float>(), rows, width, static_cast<float>(eps),
                                      drops ? &drop : nullptr, stream_of(x)),
            "rms_norm_forward");
    if (rng) rng->call.add_(1);  // the next launch on this stream draws other numbers
    ctx->save_for_backward({sum, weight, mean, rstd, keep});
    ctx->saved_data["dropout"] = drops ? dropout : 0.0;
    ctx->saved_data["delta"] = has_delta;
    ctx->saved_data["layer"] = layer;
    ctx->saved_data["bias_type"] = static_cast<std::int64_t>(layer ? bias->scalar_type() : x.scalar_type());
    ctx->saved_data["delta_type"] = static_cast<std::int64_t>(has_delta ? delta->scalar_type() : x.scalar_type());
    ctx->saved_data["out_type"] = static_cast<std::int64_t>(out_type);
    ctx->saved_data["low"] = low;
    if (!has_delta) return {out};
    if (low) return {sum, out, out_low};
    return {sum, out};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &input = saved[0], &weight = saved[1], &mean = saved[2], &rstd = saved[3], &keep = saved[4];
    const bool has_delta = ctx->saved_data["delta"].toBool(), layer = ctx->saved_data["layer"].toBool();
    const double dropout = ctx->saved_data["dropout"].toDouble();
    const auto delta_type = static_cast<torch::ScalarType>(ctx->saved_data["delta_type"].toInt());
    // The gradients reaching sum (from the next layers; only with delta), in x's type, and out, in its type.
    const auto as_input = [&](const torch::Tensor& g) {
      return g.defined() ? g.to(input.scalar_type()).contiguous() : torch::Tensor();
    };
    const auto out_type = static_cast<torch::ScalarType>(ctx->saved_data["out_type"].toInt());
    const auto grad_sum = has_delta ? as_input(grads[0]) : torch::Tensor();
    const auto& given = grads[has_delta ? 1 : 0];
    const auto grad_out = given.defined() ? given.to(out_type).contiguous() : torch::Tensor();
    // out_low's gradient, in delta's type (training_kernels.h adds the two in float).
    const auto grad_low =
        ctx->saved_data["low"].toBool() && grads[2].defined() ? grads[2].to(delta_type).contiguous() : torch::Tensor();
    kernels::Element xe{}, de{}, oe{};
    element_of(input, xe);
    element_of(out_type, oe);
    element_of(delta_type, de);
    if (!has_delta && oe != xe) de = oe;
    const c10::cuda::CUDAGuard guard(input.device());
    const auto width = input.size(-1), rows = input.numel() / width;
    auto grad_x = torch::empty_like(input);
    // Without dropout and of x's type, delta's gradient is x's.
    const auto grad_delta = has_delta && (delta_type != input.scalar_type() || dropout > 0)
                                ? torch::empty(input.sizes(), input.options().dtype(delta_type))
                                : torch::Tensor();
    kernels::DeltaDropout drop;
    if (dropout > 0) drop = {static_cast<float>(dropout), 0, nullptr, keep.data_ptr<std::uint8_t>()};
    const auto floats = input.options().dtype(torch::kFloat);
    const auto blocks = kernels::rms_norm_backward_blocks(rows);
    auto weight_partials = torch::empty({blocks, width}, floats);
    auto bias_partials = layer ? torch::empty({blocks, width}, floats) : torch::Tensor();
    const void* grad_sum_data = grad_sum.defined() ? grad_sum.data_ptr() : nullptr;
    const void* grad_out_data = grad_out.defined() ? grad_out.data_ptr() : nullptr;
    void* grad_delta_data = grad_delta.defined() ? grad_delta.data_ptr() : nullptr;
    if (layer)
      check(kernels::layer_norm_backward(
                xe, de, oe, input.data_ptr(), weight.data_ptr(), mean.data_ptr<float>(), rstd.data_ptr<float>(),
                grad_out_data, grad_low.defined() ? grad_low.data_ptr() : nullptr, grad_sum_data, grad_x.data_ptr(),
                grad_delta_data, weight_partials.data_ptr<float>(), bias_partials.data_ptr<float>(), rows, width,
                dropout > 0 ? &drop : nullptr, stream_of(input)),
            "layer_norm_backward");
    else
      check(kernels::rms_norm_backward(xe, de, oe, input.data_ptr(), weight.data_ptr(), rstd.data_ptr<float>(),
                                       grad_out_data, grad_sum_data, grad_x.data_ptr(), grad_delta_data,
                                       weight_partials.data_ptr<float>(), rows, width, dropout > 0 ? &drop : nullptr,
                                       stream_of(input)),
            "rms_norm_backward");
    const auto grad_weight = weight_partials.sum(0).to(weight.scalar_type());
    const auto bias_type = static_cast<torch::ScalarType>(ctx->saved_data["bias_type"].toInt());
    const auto grad_bias = layer ? bias_partials.sum(0).to(bias_type) : torch::Tensor();
    return {grad_x,          has_delta ? (grad_delta.defined() ? grad_delta : grad_x) : torch::Tensor(),
            grad_weight,     grad_bias,
            torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor()};
  }
};

// The training kernels take x of float, half or bfloat16, delta of x's type (or any of the three with a
// float x), the weight (and bias) of x's type, rows of whole packs no wider than max_rms_norm_width.
// `bias` defined: LayerNorm, else RMSNorm. The output in x's type, or (x float) in `out` of half or
// bfloat16, delta's type where delta is given.
bool norm_kernel_takes(const torch::Tensor& x, const torch::Tensor& delta, const torch::Tensor& weight,
                       const torch::Tensor& bias, torch::ScalarType out) {
  const auto width = x.size(-1);
  kernels::Element xe{}, de{};
  const auto like_row = [&](const torch::Tensor& t) {
    return t.scalar_type() == x.scalar_type() && t.is_contiguous() && aligned(t) && t.numel() == width &&
           t.device() == x.device();
  };
  if (!packable(x, width, xe) || width > kernels::max_rms_norm_width(xe) || !like_row(weight) ||
      (bias.defined() && !like_row(bias)))
    return false;
  if (delta.defined() &&
      (delta.sizes() != x.sizes() || !delta.is_contiguous() || !aligned(delta) || delta.device() != x.device() ||
       !element_of(delta, de) || (de != xe && xe != kernels::Element::Float)))
    return false;
  return out == x.scalar_type() ||
         (x.scalar_type() == torch::kFloat && (out == torch::kBFloat16 || out == torch::kHalf) &&
          (!delta.defined() || delta.scalar_type() == out));
}

std::optional<torch::Tensor> optional_tensor(const torch::Tensor& t) {
  return t.defined() ? std::optional<torch::Tensor>(t) : std::optional<torch::Tensor>();
}

// Where norm_kernel_takes them: (sum, out), `dropout` > 0 on delta first.
std::optional<std::pair<torch::Tensor, torch::Tensor>> kernel_add_norm_with_backward(
    const torch::Tensor& x, const torch::Tensor& delta, const torch::Tensor& weight, const torch::Tensor& bias,
    double eps, double dropout = 0, std::optional<torch::ScalarType> out_type = std::nullopt) {
  if (switched_off("add_norm_with_backward")) return std::nullopt;
  const auto out = out_type.value_or(x.scalar_type());
  if (!norm_kernel_takes(x, delta, weight, bias, out)) return std::nullopt;
  const auto outs =
      KernelAddNorm::apply(x, optional_tensor(delta), weight, optional_tensor(bias), eps, dropout, out, false);
  if (!delta.defined()) return std::make_pair(x, outs[0]);
  return std::make_pair(outs[0], outs[1]);
}

// GELU(h + bias) with its backward, one kernel each; the backward also sums the bias's gradient
// (training_kernels.h).
struct KernelBiasGelu : torch::autograd::Function<KernelBiasGelu> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h, const torch::Tensor& bias,
                               bool erf) {
    kernels::Element e{};
    element_of(h, e);
    const c10::cuda::CUDAGuard guard(h.device());
    const auto width = h.size(-1);
    auto out = torch::empty_like(h);
    const auto form = erf ? kernels::Gelu::Erf : kernels::Gelu::Tanh;
    check(kernels::bias_gelu_forward(e, h.data_ptr(), bias.data_ptr(), out.data_ptr(), h.numel() / width, width, form,
                                     stream_of(h)),
          "bias_gelu_forward");
    ctx->save_for_backward({h, bias});
    ctx->saved_data["erf"] = erf;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &h = saved[0], &bias = saved[1];
    const auto grad = grads[0].to(h.scalar_type()).contiguous();
    kernels::Element e{};
    element_of(h, e);
    const c10::cuda::CUDAGuard guard(h.device());
    const auto width = h.size(-1), rows = h.numel() / width;
    auto grad_pre = torch::empty_like(h);
    auto partials =
        torch::empty({kernels::bias_gelu_backward_blocks(e, rows, width), width}, h.options().dtype(torch::kFloat));
    const auto form = ctx->saved_data["erf"].toBool() ? kernels::Gelu::Erf : kernels::Gelu::Tanh;
    check(kernels::bias_gelu_backward(e, h.data_ptr(), bias.data_ptr(), grad.data_ptr(), grad_pre.data_ptr(),
                                      partials.data_ptr<float>(), rows, width, form, stream_of(h)),
          "bias_gelu_backward");
    return {grad_pre, partials.sum(0).to(bias.scalar_type()), torch::Tensor()};
  }
};

std::optional<torch::Tensor> kernel_bias_gelu(const torch::Tensor& h, const torch::Tensor& bias, bool erf) {
  if (switched_off("bias_gelu")) return std::nullopt;
  const auto width = h.size(-1);
  kernels::Element e{};
  if (!packable(h, width, e) || !bias.is_contiguous() || !aligned(bias) || bias.numel() != width ||
      bias.scalar_type() != h.scalar_type() || bias.device() != h.device())
    return std::nullopt;
  return KernelBiasGelu::apply(h, bias, erf);
}

// SiLU(gate) × up with its backward, one kernel each (training_kernels.h).
struct KernelSiluMul : torch::autograd::Function<KernelSiluMul> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& gate,
                               const torch::Tensor& up) {
    kernels::Element e{};
    element_of(gate, e);
    const c10::cuda::CUDAGuard guard(gate.device());
    auto out = torch::empty_like(gate);
    check(kernels::silu_mul_forward(e, gate.data_ptr(), up.data_ptr(), out.data_ptr(), gate.numel(), stream_of(gate)),
          "silu_mul_forward");
    ctx->save_for_backward({gate, up});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &gate = saved[0], &up = saved[1];
    const auto grad = grads[0].to(gate.scalar_type()).contiguous();
    kernels::Element e{};
    element_of(gate, e);
    const c10::cuda::CUDAGuard guard(gate.device());
    auto grad_gate = torch::empty_like(gate), grad_up = torch::empty_like(up);
    check(kernels::silu_mul_backward(e, gate.data_ptr(), up.data_ptr(), grad.data_ptr(), grad_gate.data_ptr(),
                                     grad_up.data_ptr(), gate.numel(), stream_of(gate)),
          "silu_mul_backward");
    return {grad_gate, grad_up};
  }
};

std::optional<torch::Tensor> kernel_silu_mul_with_backward(const torch::Tensor& gate, const torch::Tensor& up) {
  kernels::Element e{};
  if (!packable(gate, gate.numel(), e) || !up.is_contiguous() || !aligned(up) || up.sizes() != gate.sizes() ||
      up.scalar_type() != gate.scalar_type() || up.device() != gate.device())
    return std::nullopt;
  return KernelSiluMul::apply(gate, up);
}

std::optional<torch::Tensor> kernel_silu_mul(const torch::Tensor& gate_up) {
  if (switched_off("silu_mul")) return std::nullopt;
  const auto width = gate_up.size(-1) / 2;
  kernels::Element e{};
  if (packable(gate_up, width, e)) {
    const c10::cuda::CUDAGuard guard(gate_up.device());
    auto sizes = gate_up.sizes().vec();
    sizes.back() = width;
    auto out = torch::empty(sizes, gate_up.options());
    run_kernel("xpuperf::silu_mul", [&] {
      return kernels::silu_mul(e, gate_up.data_ptr(), out.data_ptr(), gate_up.numel() / (2 * width), width,
                               stream_of(gate_up));
    });
    return out;
  }
  return std::nullopt;
}

// Whether the GEMV takes x (1 to kMaxGemvRows rows) and weight; e: their element type.
bool gemv_takes(const torch::Tensor& x, const torch::Tensor& weight, kernels::Element& e) {
  const auto width = x.size(-1);
  const auto rows = width == 0 ? 0 : x.numel() / width;
  return rows >= 1 && rows <= kernels::kMaxGemvRows && packable(x, width, e) && weight.dim() == 2 &&
         weight.size(1) == width && weight.scalar_type() == x.scalar_type() && weight.is_contiguous() &&
         aligned(weight) && weight.device() == x.device();
}

// The rotary kernels' arguments for q, k and v of batch × tokens rows of `like`'s type and device:
// the tables and, with a step, the layer's cache (the outputs' pointers left to the caller), or
// nothing when the kernels do not take them.
std::optional<kernels::RotaryQkv> rotary_arguments(const torch::Tensor& like, std::int64_t batch, std::int64_t tokens,
                                                   std::int64_t heads, std::int64_t kv_heads, std::int64_t dim,
                                                   const torch::Tensor& cos, const torch::Tensor& sin_signed,
                                                   const KvStep* step, std::int64_t layer) {
  const auto same = [&](const torch::Tensor& t) {
    return t.scalar_type() == like.scalar_type() && t.is_contiguous() && t.device() == like.device();
  };
  if (!(dim % 2 == 0 && same(cos) && same(sin_signed) && cos.sizes() == sin_signed.sizes() &&
        (cos.size(0) == 1 || cos.size(0) == batch) && cos.size(1) == tokens && cos.size(-1) == dim))
    return std::nullopt;
  kernels::RotaryQkv a;
  a.cos = cos.data_ptr();
  a.sin_signed = sin_signed.data_ptr();
  if (step) {
    const auto& k_cache = step->cache->k[static_cast<std::size_t>(layer)];
    const auto& v_cache = step->cache->v[static_cast<std::size_t>(layer)];
    if (!(same(k_cache) && same(v_cache) && step->slots.is_contiguous() && step->slots.device() == like.device() &&
          step->positions.device() == like.device() && step->slots.scalar_type() == torch::kLong &&
          step->positions.scalar_type() == torch::kLong && (tokens == 1 || step->positions.stride(1) == 1)))
      return std::nullopt;
    a.k_cache = k_cache.data_ptr();
    a.v_cache = v_cache.data_ptr();
    a.slots = step->slots.data_ptr<std::int64_t>();
    a.positions = step->positions.data_ptr<std::int64_t>();
    a.positions_row_stride = step->positions.stride(0);
    a.max_tokens = k_cache.size(1);
  }
  a.batch = batch, a.tokens = tokens, a.heads = heads, a.kv_heads = kv_heads, a.head_dim = dim;
  a.cos_batch = cos.size(0);
  return a;
}

std::optional<RotatedQkv> kernel_rotary_qkv(const torch::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads,
                                            const torch::Tensor& cos, const torch::Tensor& sin_signed,
                                            const KvStep* step, std::int64_t layer) {
  if (switched_off("rotary_qkv")) return std::nullopt;
  const auto batch = qkv.size(0), tokens = qkv.size(1), dim = qkv.size(3);
  kernels::Element e{};
  if (!qkv.is_cuda() || !qkv.is_contiguous() || !element_of(qkv, e)) return std::nullopt;
  auto a = rotary_arguments(qkv, batch, tokens, heads, kv_heads, dim, cos, sin_signed, step, layer);
  if (!a) return std::nullopt;
  const c10::cuda::CUDAGuard guard(qkv.device());
  RotatedQkv out;
  out.q = torch::empty({batch, tokens, heads, dim}, qkv.options());
  const bool decoding = step && !step->fresh;  // the attention reads k and v from the cache
  if (!decoding) {
    out.k = torch::empty({batch, tokens, kv_heads, dim}, qkv.options());
    out.v = qkv.narrow(2, heads + kv_heads, kv_heads);
  }
  a->qkv = qkv.data_ptr();
  a->q = out.q.data_ptr();
  a->k = decoding ? nullptr : out.k.data_ptr();
  out.cached = step != nullptr;
  run_kernel("xpuperf::rotary_qkv", [&] { return kernels::rotary_qkv(e, *a, stream_of(qkv)); });
  return out;
}

// A decoding step's q/k/v GEMV and rotary in one kernel (fused_kernels.h: gemv_rotary_qkv).
std::optional<RotatedQkv> kernel_linear_rotary_qkv(const torch::Tensor& x, const torch::Tensor& qkv_weight,
                                                   std::int64_t heads, std::int64_t kv_heads, std::int64_t dim,
                                                   const torch::Tensor& cos, const torch::Tensor& sin_signed,
                                                   const KvStep* step, std::int64_t layer) {
  if (switched_off("gemv_rotary_qkv")) return std::nullopt;
  kernels::Element e{};
  if (!step || step->fresh || x.dim() != 3 || !gemv_takes(x, qkv_weight, e) ||
      qkv_weight.size(0) != (heads + 2 * kv_heads) * dim)
    return std::nullopt;
  const auto batch = x.size(0), tokens = x.size(1);
  auto a = rotary_arguments(x, batch, tokens, heads, kv_heads, dim, cos, sin_signed, step, layer);
  if (!a) return std::nullopt;
  const c10::cuda::CUDAGuard guard(x.device());
  RotatedQkv out;
  out.q = torch::empty({batch, tokens, heads, dim}, x.options());
  out.cached = true;
  a->q = out.q.data_ptr();
  run_kernel("xpuperf::gemv_rotary_qkv", [&] {
    return kernels::gemv_rotary_qkv(e, x.data_ptr(), qkv_weight.data_ptr(), *a, x.size(-1), stream_of(x));
  });
  return out;
}

// Rotary positions on a joined q/k/v with their backward, one kernel each way (training_kernels.h):
// q, k rotated and v copied out of qkv; back, qkv's whole gradient in one pass.
struct KernelRotaryQkv : torch::autograd::Function<KernelRotaryQkv> {
  static kernels::RotaryShape shape(const torch::Tensor& qkv, const torch::Tensor& cos, std::int64_t heads,
                                    std::int64_t kv_heads) {
    kernels::RotaryShape s;
    s.batch = qkv.size(0), s.tokens = qkv.size(1), s.heads = heads, s.kv_heads = kv_heads, s.head_dim = qkv.size(3);
    s.cos_batch = cos.size(0);
    return s;
  }

  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv,
                                                const torch::Tensor& cos, const torch::Tensor& sin_signed,
                                                std::int64_t heads, std::int64_t kv_heads) {
    kernels::Element e{}, table{};
    element_of(qkv, e);
    element_of(cos, table);
    const c10::cuda::CUDAGuard guard(qkv.device());
    const auto s = shape(qkv, cos, heads, kv_heads);
    auto q = torch::empty({s.batch, s.tokens, heads, s.head_dim}, qkv.options());
    auto k = torch::empty({s.batch, s.tokens, kv_heads, s.head_dim}, qkv.options()), v = torch::empty_like(k);
    check(kernels::rotary_forward(e, table, s, qkv.data_ptr(), cos.data_ptr(), sin_signed.data_ptr(), q.data_ptr(),
                                  k.data_ptr(), v.data_ptr(), stream_of(qkv)),
          "rotary_forward");
    ctx->save_for_backward({cos, sin_signed});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["kv_heads"] = kv_heads;
    ctx->saved_data["type"] = static_cast<std::int64_t>(qkv.scalar_type());
    ctx->saved_data["batch"] = s.batch;
    ctx->saved_data["tokens"] = s.tokens;
    return {q, k, v};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &cos = saved[0], &sin_signed = saved[1];
    const auto heads = ctx->saved_data["heads"].toInt(), kv_heads = ctx->saved_data["kv_heads"].toInt();
    const auto type = static_cast<torch::ScalarType>(ctx->saved_data["type"].toInt());
    const auto b = ctx->saved_data["batch"].toInt(), t = ctx->saved_data["tokens"].toInt(), d = cos.size(-1);
    const auto options = cos.options().dtype(type);
    // An output nothing used has no gradient: zeros in its place.
    const auto given = [&](std::size_t n, std::int64_t heads_of) {
      return grads[n].defined() ? grads[n].to(type).contiguous() : torch::zeros({b, t, heads_of, d}, options);
    };
    const auto grad_q = given(0, heads), grad_k = given(1, kv_heads), grad_v = given(2, kv_heads);
    kernels::Element e{}, table{};
    element_of(type, e);
    element_of(cos, table);
    const c10::cuda::CUDAGuard guard(cos.device());
    auto grad_qkv = torch::empty({b, t, heads + 2 * kv_heads, d}, options);
    const auto s = shape(grad_qkv, cos, heads, kv_heads);
    check(kernels::rotary_backward(e, table, s, grad_q.data_ptr(), grad_k.data_ptr(), grad_v.data_ptr(), cos.data_ptr(),
                                   sin_signed.data_ptr(), grad_qkv.data_ptr(), stream_of(grad_qkv)),
          "rotary_backward");
    return {grad_qkv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// Where the training kernels take them: qkv (batch, tokens, heads + 2 kv_heads, head_dim) contiguous of
// a kernel type, the tables (1 or batch, tokens, 1, head_dim) contiguous, of qkv's type or float.
std::optional<RotatedQkv> kernel_rotary_qkv_with_backward(const torch::Tensor& qkv, std::int64_t heads,
                                                          std::int64_t kv_heads, const torch::Tensor& cos,
                                                          const torch::Tensor& sin_signed) {
  kernels::Element e{}, table{};
  const auto table_fits = [&](const torch::Tensor& t) {
    return t.dim() == 4 && t.is_contiguous() && t.device() == qkv.device() && t.scalar_type() == cos.scalar_type() &&
           (t.size(0) == 1 || t.size(0) == qkv.size(0)) && t.size(1) == qkv.size(1) && t.size(2) == 1 &&
           t.size(3) == qkv.size(3);
  };
  if (!qkv.is_cuda() || qkv.dim() != 4 || !qkv.is_contiguous() || !element_of(qkv, e) || qkv.size(3) % 2 != 0 ||
      qkv.size(2) != heads + 2 * kv_heads || !element_of(cos, table) ||
      (cos.scalar_type() != qkv.scalar_type() && cos.scalar_type() != torch::kFloat) || !table_fits(cos) ||
      !table_fits(sin_signed))
    return std::nullopt;
  const auto outs = KernelRotaryQkv::apply(qkv, cos, sin_signed, heads, kv_heads);
  return RotatedQkv{outs[0], outs[1], outs[2], false};
}

std::optional<torch::Tensor> kernel_linear(const torch::Tensor& x, const torch::Tensor& weight) {
  if (switched_off("gemv")) return std::nullopt;
  kernels::Element e{};
  if (!gemv_takes(x, weight, e)) return std::nullopt;
  const c10::cuda::CUDAGuard guard(x.device());
  const auto width = x.size(-1), rows = x.numel() / width;
  auto sizes = x.sizes().vec();
  sizes.back() = weight.size(0);
  auto y = torch::empty(sizes, x.options());
  run_kernel("xpuperf::gemv", [&] {
    return kernels::gemv(e, x.data_ptr(), weight.data_ptr(), y.data_ptr(), rows, weight.size(0), width, stream_of(x));
  });
  return y;
}

std::optional<torch::Tensor> kernel_linear_silu_mul(const torch::Tensor& x, const torch::Tensor& gate_up_weight) {
  if (switched_off("gemv_silu_mul")) return std::nullopt;
  kernels::Element e{};
  if (!gemv_takes(x, gate_up_weight, e) || gate_up_weight.size(0) % 2 != 0) return std::nullopt;
  const c10::cuda::CUDAGuard guard(x.device());
  const auto width = x.size(-1), rows = x.numel() / width, units = gate_up_weight.size(0) / 2;
  auto sizes = x.sizes().vec();
  sizes.back() = units;
  auto y = torch::empty(sizes, x.options());
  run_kernel("xpuperf::gemv_silu_mul", [&] {
    return kernels::gemv_silu_mul(e, x.data_ptr(), gate_up_weight.data_ptr(), y.data_ptr(), rows, units, width,
                                  stream_of(x));
  });
  return y;
}

std::optional<torch::Tensor> kernel_decode_attention(const torch::Tensor& q, const KvStep& step, std::int64_t layer) {
  if (switched_off("decode_attention")) return std::nullopt;
  const auto batch = q.size(0), heads = q.size(1), tokens = q.size(2), dim = q.size(3);
  const auto& k_cache = step.cache->k[static_cast<std::size_t>(layer)];
  const auto& v_cache = step.cache->v[static_cast<std::size_t>(layer)];
  const auto same = [&](const torch::Tensor& t) {
    return t.scalar_type() == q.scalar_type() && t.is_contiguous() && t.device() == q.device() && aligned(t);
  };
  kernels::Element e{};
  if (!q.is_cuda() || !element_of(q, e) || !kernels::decode_attention_takes(e, dim) || !same(k_cache) ||
      !same(v_cache) || k_cache.size(3) != dim || heads % k_cache.size(2) != 0 || batch > k_cache.size(0) ||
      step.positions.scalar_type() != torch::kLong || step.positions.device() != q.device() ||
      step.positions.size(0) != batch || step.positions.size(1) != tokens ||
      (tokens > 1 && step.positions.stride(1) != 1))
    return std::nullopt;
  const c10::cuda::CUDAGuard guard(q.device());
  // The kernel reads q as (batch, tokens, heads, dim), which is how the models make it (a view of the
  // projection's output): then no copy.
  const auto rows_first = q.transpose(1, 2).contiguous();
  if (!aligned(rows_first)) return std::nullopt;
  auto out = torch::empty_like(rows_first);
  kernels::DecodeAttention a;
  a.q = rows_first.data_ptr();
  a.k_cache = k_cache.data_ptr();
  a.v_cache = v_cache.data_ptr();
  a.positions = step.positions.data_ptr<std::int64_t>();
  a.positions_row_stride = step.positions.stride(0);
  a.out = out.data_ptr();
  a.batch = batch, a.tokens = tokens, a.heads = heads, a.kv_heads = k_cache.size(2), a.head_dim = dim;
  a.max_tokens = k_cache.size(1), a.visible = step.visible;
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dim)));
  torch::Tensor partial;
  if (const auto floats = kernels::decode_attention_workspace(e, a); floats > 0) {
    partial = torch::empty({floats}, q.options().dtype(torch::kFloat));
    a.partial = partial.data_ptr<float>();
  }
  run_kernel("xpuperf::decode_attention", [&] { return kernels::decode_attention(e, a, stream_of(q)); });
  return out.transpose(1, 2);
}

// Fewer rows than this: ATen's reduction, which spreads a row over many blocks.
constexpr std::int64_t kMinArgmaxRows = 64;

std::optional<torch::Tensor> kernel_argmax(const torch::Tensor& x) {
  if (switched_off("argmax")) return std::nullopt;
  kernels::Element e{};
  if (!x.is_cuda() || x.dim() == 0 || !x.is_contiguous() || !element_of(x, e) || x.size(-1) == 0) return std::nullopt;
  const auto width = x.size(-1), rows = x.numel() / width;
  if (rows < kMinArgmaxRows) return std::nullopt;
  const c10::cuda::CUDAGuard guard(x.device());
  auto sizes = x.sizes().vec();
  sizes.pop_back();
  auto out = torch::empty(sizes, x.options().dtype(torch::kLong));
  run_kernel("xpuperf::argmax", [&] {
    return kernels::argmax_rows(e, x.data_ptr(), out.data_ptr<std::int64_t>(), rows, width, stream_of(x));
  });
  return out;
}

}  // namespace
#endif

namespace {
// Whether autograd records an operation on these tensors: the kernels without a backward then leave
// the work to ATen's operators or to the kernels with one (the cross entropy's, the norm's with its
// residual add, SiLU × up of two tensors), so that training with fused_kernels gets the right gradients.
[[maybe_unused]] bool recording(std::initializer_list<torch::Tensor> tensors) {
  if (!torch::GradMode::is_enabled()) return false;
  for (const auto& t : tensors)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}
}  // namespace

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

bool kernels_built() {
#ifdef XPUPERF_HAVE_TORCH_CUDA
  return true;
#else
  return false;
#endif
}

std::pair<torch::Tensor, torch::Tensor> add_rms_norm(const torch::Tensor& x, const torch::Tensor& delta,
                                                     const torch::Tensor& weight, double eps,
                                                     [[maybe_unused]] bool use_kernels,
                                                     std::optional<torch::ScalarType> out_type) {
  const bool cast = out_type && *out_type != x.scalar_type();
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (use_kernels) {
    if (!cast && !recording({x, delta, weight}))
      if (auto done = kernel_add_rms_norm(x, delta, weight, eps)) return *done;
    // Autograd records, or the types are mixed (an fp32 residual stream under autocast).
    if (auto done = kernel_add_norm_with_backward(x, delta, weight, torch::Tensor(), eps, 0, out_type)) return *done;
  }
#endif
  const auto sum = delta.defined() ? x + delta : x;
  const auto normed = compat::rms_norm(sum, weight, eps);
  return {sum, cast ? normed.to(*out_type) : normed};
}

std::pair<torch::Tensor, torch::Tensor> add_layer_norm(const torch::Tensor& x, const torch::Tensor& delta,
                                                       const torch::Tensor& weight, const torch::Tensor& bias,
                                                       double eps, [[maybe_unused]] bool use_kernels,
                                                       double delta_dropout,
                                                       std::optional<torch::ScalarType> out_type) {
  const bool drops = delta.defined() && delta_dropout > 0;
  const bool cast = out_type && *out_type != x.scalar_type();
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (use_kernels && bias.defined()) {
    if (!drops && !cast && !recording({x, delta, weight, bias}))
      if (auto done = kernel_add_layer_norm(x, delta, weight, bias, eps)) return *done;
    // Autograd records, or the types are mixed, or delta drops out. Autocast would run ATen's layer
    // norm in float and return float for a half x: the kernel (which returns x's type) takes a float x
    // there only.
    if (x.scalar_type() == torch::kFloat || !compat::autocast_enabled(x.device().type()))
      if (auto done = kernel_add_norm_with_backward(x, delta, weight, bias, eps, drops ? delta_dropout : 0, out_type))
        return *done;
  }
#endif
  const auto dropped = drops ? torch::dropout(delta, delta_dropout, /*train=*/true) : delta;
  const auto sum = dropped.defined() ? x + dropped : x;
  const auto normed = torch::layer_norm(sum, {sum.size(-1)}, weight, bias, eps);
  return {sum, cast ? normed.to(*out_type) : normed};
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> add_layer_norm_with_copy(
    const torch::Tensor& x, const torch::Tensor& delta, const torch::Tensor& weight, const torch::Tensor& bias,
    double eps, [[maybe_unused]] bool use_kernels, double delta_dropout) {
  TORCH_CHECK(delta.defined() && bias.defined(), "add_layer_norm_with_copy: needs delta and the bias");
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (use_kernels && x.scalar_type() == torch::kFloat && delta.scalar_type() != torch::kFloat &&
      norm_kernel_takes(x, delta, weight, bias, x.scalar_type())) {
    const auto outs = KernelAddNorm::apply(x, delta, weight, bias, eps, delta_dropout, x.scalar_type(), true);
    return {outs[0], outs[1], outs[2]};
  }
#endif
  const auto [sum, out] = add_layer_norm(x, delta, weight, bias, eps, use_kernels, delta_dropout);
  return {sum, out, out.to(delta.scalar_type())};
}

std::optional<torch::ScalarType> autocast_product_type(const torch::Tensor& x) {
  if (x.scalar_type() != torch::kFloat || !compat::autocast_enabled(x.device().type())) return std::nullopt;
  return compat::autocast_dtype(x.device().type());
}

torch::Tensor bias_gelu(const torch::Tensor& h, const torch::Tensor& bias, [[maybe_unused]] bool use_kernels,
                        Gelu form) {
  const auto b = bias.scalar_type() == h.scalar_type() ? bias : bias.to(h.scalar_type());
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (use_kernels)
    if (auto done = kernel_bias_gelu(h, b, form == Gelu::Erf)) return *done;
#endif
  return torch::gelu(h + b, form == Gelu::Erf ? "none" : "tanh");
}

torch::Tensor argmax(const torch::Tensor& x, [[maybe_unused]] bool use_kernels) {
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (use_kernels)
    if (auto done = kernel_argmax(x)) return *done;
#endif
  return x.argmax(-1);
}

torch::Tensor silu_mul(const torch::Tensor& gate, const torch::Tensor& up, [[maybe_unused]] bool use_kernels) {
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (use_kernels)
    if (auto done = kernel_silu_mul_with_backward(gate, up)) return *done;
#endif
  return torch::silu(gate) * up;
}

torch::Tensor silu_mul(const torch::Tensor& gate_up, [[maybe_unused]] bool use_kernels) {
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (use_kernels && !recording({gate_up}))
    if (auto done = kernel_silu_mul(gate_up)) return *done;
#endif
  const auto width = gate_up.size(-1) / 2;
  return torch::silu(gate_up.narrow(-1, 0, width)) * gate_up.narrow(-1, width, width);
}

RotatedQkv linear_rotary_qkv(const torch::Tensor& x, const torch::Tensor& qkv_weight, std::int64_t heads,
                             std::int64_t kv_heads, std::int64_t head_dim, const torch::Tensor& cos,
                             const torch::Tensor& sin_signed, const KvStep* step, std::int64_t layer,
                             bool use_kernels) {
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (use_kernels && !recording({x, qkv_weight}))
    if (auto done = kernel_linear_rotary_qkv(x, qkv_weight, heads, kv_heads, head_dim, cos, sin_signed, step, layer))
      return *done;
#endif
  const auto qkv = linear(x, qkv_weight, use_kernels).view({x.size(0), x.size(1), heads + 2 * kv_heads, head_dim});
  return rotary_qkv(qkv, heads, kv_heads, cos, sin_signed, step, layer, use_kernels);
}

RotatedQkv rotary_qkv(const torch::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads, const torch::Tensor& cos,
                      const torch::Tensor& sin_signed, [[maybe_unused]] const KvStep* step,
                      [[maybe_unused]] std::int64_t layer, [[maybe_unused]] bool use_kernels) {
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (use_kernels && !recording({qkv, cos, sin_signed}))
    if (auto done = kernel_rotary_qkv(qkv, heads, kv_heads, cos, sin_signed, step, layer)) return *done;
  if (use_kernels && !step)  // training: the kernels with a backward
    if (auto done = kernel_rotary_qkv_with_backward(qkv, heads, kv_heads, cos, sin_signed)) return *done;
#endif
  const auto qk = rotary(qkv.narrow(2, 0, heads + kv_heads), cos, sin_signed);  // q and k rotated together
  return {qk.narrow(2, 0, heads), qk.narrow(2, heads, kv_heads), qkv.narrow(2, heads + kv_heads, kv_heads), false};
}

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, [[maybe_unused]] bool use_kernels) {
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (use_kernels && !recording({x, weight}))
    if (auto done = kernel_linear(x, weight)) return *done;
#endif
  return torch::nn::functional::linear(x, weight);
}

torch::Tensor linear_silu_mul(const torch::Tensor& x, const torch::Tensor& gate_up_weight, bool use_kernels) {
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (use_kernels && !recording({x, gate_up_weight}))
    if (auto done = kernel_linear_silu_mul(x, gate_up_weight)) return *done;
#endif
  return silu_mul(linear(x, gate_up_weight, use_kernels), use_kernels);
}

std::optional<torch::Tensor> decode_attention([[maybe_unused]] const torch::Tensor& q,
                                              [[maybe_unused]] const KvStep& step,
                                              [[maybe_unused]] std::int64_t layer) {
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (!step.fresh && step.visible > 0 && !recording({q})) return kernel_decode_attention(q, step, layer);
#endif
  return std::nullopt;
}

torch::Tensor cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets,
                            [[maybe_unused]] bool use_kernels, [[maybe_unused]] bool gradient_in_logits) {
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (use_kernels)
    if (auto done = kernel_cross_entropy(logits, targets, gradient_in_logits)) return *done;
#endif
  return torch::nn::functional::nll_loss(torch::log_softmax(logits, -1, torch::kFloat), targets);
}

}  // namespace xpuperf::models::fused
