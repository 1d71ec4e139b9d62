#include "xpuperf/models/batch_norm_act.h"

#include <optional>

#ifdef XPUPERF_HAVE_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>

#include "xpuperf/models/cuda/batch_norm_kernels.h"
#include "xpuperf/models/cuda/kernel_tensors.h"
#endif

namespace xpuperf::models::fused {

namespace {

torch::Tensor activate(const torch::Tensor& y, Activation act) {
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

#ifdef XPUPERF_HAVE_TORCH_CUDA
using kernels::aligned;
using kernels::check;
using kernels::element_of;
using kernels::stream_of;

kernels::Activation kernel_activation(std::int64_t act) {
  switch (static_cast<Activation>(act)) {
    case Activation::Relu:
      return kernels::Activation::Relu;
    case Activation::Relu6:
      return kernels::Activation::Relu6;
    case Activation::None:
      break;
  }
  return kernels::Activation::None;
}

// The batch norm kernels as one autograd function. Inputs x, weight, bias, the residual (optional);
// the running statistics (optional, updated in place, no gradient). Kept for backward: x, the output
// (for the activation's mask), the weight, the batch's mean and invstd.
struct KernelBatchNorm : torch::autograd::Function<KernelBatchNorm> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               const std::optional<torch::Tensor>& residual,
                               const std::optional<torch::Tensor>& running_mean,
                               const std::optional<torch::Tensor>& running_var, double momentum, double eps,
                               std::int64_t act) {
    kernels::Element e{};
    element_of(x, e);
    const c10::cuda::CUDAGuard guard(x.device());
    const auto channels = x.size(1), rows = x.numel() / channels;
    auto y = torch::empty_like(x, torch::MemoryFormat::ChannelsLast);
    const auto floats = x.options().dtype(torch::kFloat);
    auto mean = torch::empty({channels}, floats), invstd = torch::empty({channels}, floats);
    auto workspace = torch::empty({kernels::batch_norm_workspace(e, rows, channels)}, floats);
    check(kernels::batch_norm_forward(
              e, x.data_ptr(), residual ? residual->data_ptr() : nullptr, y.data_ptr(), weight.data_ptr<float>(),
              bias.data_ptr<float>(), mean.data_ptr<float>(), invstd.data_ptr<float>(),
              running_mean ? running_mean->data_ptr<float>() : nullptr,
              running_var ? running_var->data_ptr<float>() : nullptr, workspace.data_ptr<float>(), rows, channels,
              static_cast<float>(momentum), static_cast<float>(eps), kernel_activation(act), stream_of(x)),
          "batch_norm_forward");
    ctx->save_for_backward(
        {x, act == static_cast<std::int64_t>(Activation::None) ? torch::Tensor() : y, weight, mean, invstd});
    ctx->saved_data["act"] = act;
    ctx->saved_data["residual"] = residual.has_value();
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &y = saved[1], &weight = saved[2], &mean = saved[3], &invstd = saved[4];
    const auto act = ctx->saved_data["act"].toInt();
    const bool residual = ctx->saved_data["residual"].toBool();
    if (!grads[0].defined()) return torch::autograd::variable_list(9);  // the output went unused: no gradient
    kernels::Element e{};
    element_of(x, e);
    const c10::cuda::CUDAGuard guard(x.device());
    const auto grad_y = grads[0].to(x.scalar_type()).contiguous(torch::MemoryFormat::ChannelsLast);
    const auto channels = x.size(1), rows = x.numel() / channels;
    auto grad_x = torch::empty_like(x, torch::MemoryFormat::ChannelsLast);
    auto grad_residual = residual ? torch::empty_like(x, torch::MemoryFormat::ChannelsLast) : torch::Tensor();
    auto grad_weight = torch::empty_like(weight), grad_bias = torch::empty_like(weight);
    auto workspace = torch::empty({kernels::batch_norm_workspace(e, rows, channels)}, weight.options());
    check(kernels::batch_norm_backward(
              e, x.data_ptr(), y.defined() ? y.data_ptr() : nullptr, grad_y.data_ptr(), weight.data_ptr<float>(),
              mean.data_ptr<float>(), invstd.data_ptr<float>(), grad_x.data_ptr(),
              residual ? grad_residual.data_ptr() : nullptr, grad_weight.data_ptr<float>(), grad_bias.data_ptr<float>(),
              workspace.data_ptr<float>(), rows, channels, kernel_activation(act), stream_of(x)),
          "batch_norm_backward");
    return {grad_x,          grad_weight,     grad_bias,       grad_residual,  torch::Tensor(),
            torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// x a 4-d channels-last CUDA tensor of the kernels' types with whole packs of channels and more than
// one value a channel; the residual of x's shape, type and layout; bn's parameters and running
// statistics float, with a momentum (not the cumulative average).
bool kernels_take(const torch::Tensor& x, const torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& residual) {
  kernels::Element e{};
  if (x.dim() != 4 || !x.is_cuda() || !element_of(x, e) || !x.is_contiguous(torch::MemoryFormat::ChannelsLast) ||
      !aligned(x) || x.size(1) % kernels::pack_elements(e) != 0 || x.numel() / std::max<std::int64_t>(1, x.size(1)) < 2)
    return false;
  if (residual.defined() &&
      (residual.sizes() != x.sizes() || residual.scalar_type() != x.scalar_type() || residual.device() != x.device() ||
       !residual.is_contiguous(torch::MemoryFormat::ChannelsLast) || !aligned(residual)))
    return false;
  const auto& o = bn.options;
  if (!o.affine() || !o.momentum().has_value()) return false;
  const auto float_channels = [&](const torch::Tensor& t) {
    return t.defined() && t.scalar_type() == torch::kFloat && t.device() == x.device() && t.is_contiguous() &&
           t.numel() == x.size(1);
  };
  return float_channels(bn.weight) && float_channels(bn.bias) &&
         (!o.track_running_stats() || (float_channels(bn.running_mean) && float_channels(bn.running_var)));
}
#endif

}  // namespace

torch::Tensor batch_norm_act(const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& residual,
                             Activation act, [[maybe_unused]] bool use_kernels) {
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (use_kernels && bn.is_training() && kernels_take(x, bn, residual)) {
    const bool tracks = bn.options.track_running_stats();
    if (tracks) bn.num_batches_tracked.add_(1);
    const auto optional = [](const torch::Tensor& t, bool present) {
      return present ? std::optional<torch::Tensor>(t) : std::optional<torch::Tensor>();
    };
    return KernelBatchNorm::apply(x, bn.weight, bn.bias, optional(residual, residual.defined()),
                                  optional(bn.running_mean, tracks), optional(bn.running_var, tracks),
                                  *bn.options.momentum(), bn.options.eps(), static_cast<std::int64_t>(act));
  }
#endif
  const auto normed = bn.forward(x);
  return activate(residual.defined() ? normed + residual : normed, act);
}

}  // namespace xpuperf::models::fused
