// The residual add with the RMSNorm or LayerNorm after it (kernels/fused_kernels.h for inference,
// kernels/training_kernels.h with the backward), as xpuperf's add_rms_norm, add_layer_norm and
// add_layer_norm_with_copy.

#include <map>
#include <mutex>

#include "kernels/training_kernels.h"
#include "nvidia_ops.h"
#include "xpuperf/torchrt/compat.h"

namespace xpuperf::nvidia {
namespace {

// The kernel keeps a row in shared memory: well under the 48 KiB a block may have without opting in.
constexpr std::int64_t kMaxNormRowBytes = 32 * 1024;

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
// (kernels/training_kernels.h). Inputs x, delta, weight, bias (no delta: no add; a bias only for
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

std::tuple<torch::Tensor, torch::Tensor> cuda_add_rms_norm(const torch::Tensor& x, const OptionalTensor& delta_given,
                                                           const torch::Tensor& weight, double eps,
                                                           c10::optional<torch::ScalarType> out_given) {
  const auto delta = value_of(delta_given);
  const auto out_type = std_optional(out_given);
  const bool cast = out_type && *out_type != x.scalar_type();
  if (!cast && !recording({x, delta, weight}))
    if (auto done = kernel_add_rms_norm(x, delta, weight, eps)) return *done;
  // Autograd records, or the types are mixed (an fp32 residual stream under autocast).
  if (auto done = kernel_add_norm_with_backward(x, delta, weight, torch::Tensor(), eps, 0, out_type)) return *done;
  return ops::composite::add_rms_norm(x, delta, weight, eps, out_type);
}

std::tuple<torch::Tensor, torch::Tensor> cuda_add_layer_norm(const torch::Tensor& x, const OptionalTensor& delta_given,
                                                             const torch::Tensor& weight,
                                                             const OptionalTensor& bias_given, double eps,
                                                             double delta_dropout,
                                                             c10::optional<torch::ScalarType> out_given) {
  const auto delta = value_of(delta_given), bias = value_of(bias_given);
  const auto out_type = std_optional(out_given);
  const bool drops = delta.defined() && delta_dropout > 0;
  const bool cast = out_type && *out_type != x.scalar_type();
  if (bias.defined()) {
    if (!drops && !cast && !recording({x, delta, weight, bias}))
      if (auto done = kernel_add_layer_norm(x, delta, weight, bias, eps)) return *done;
    // Autograd records, or the types are mixed, or delta drops out. Autocast would run ATen's layer
    // norm in float and return float for a half x: the kernel (which returns x's type) takes a float x
    // there only.
    if (x.scalar_type() == torch::kFloat || !compat::autocast_enabled(x.device().type()))
      if (auto done = kernel_add_norm_with_backward(x, delta, weight, bias, eps, drops ? delta_dropout : 0, out_type))
        return *done;
  }
  return ops::composite::add_layer_norm(x, delta, weight, bias, eps, delta_dropout, out_type);
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> cuda_add_layer_norm_with_copy(
    const torch::Tensor& x, const torch::Tensor& delta, const torch::Tensor& weight, const torch::Tensor& bias,
    double eps, double delta_dropout) {
  if (x.scalar_type() == torch::kFloat && delta.scalar_type() != torch::kFloat &&
      norm_kernel_takes(x, delta, weight, bias, x.scalar_type())) {
    const auto outs = KernelAddNorm::apply(x, delta, weight, bias, eps, delta_dropout, x.scalar_type(), true);
    return {outs[0], outs[1], outs[2]};
  }
  auto [sum, out] = cuda_add_layer_norm(x, delta, weight, bias, eps, delta_dropout, c10::nullopt);
  auto copy = out.to(delta.scalar_type());
  return {std::move(sum), std::move(out), std::move(copy)};
}

}  // namespace

void register_norm_ops(torch::Library& m) {
  m.impl("add_rms_norm", &cuda_add_rms_norm);
  m.impl("add_layer_norm", &cuda_add_layer_norm);
  m.impl("add_layer_norm_with_copy", &cuda_add_layer_norm_with_copy);
}

}  // namespace xpuperf::nvidia
