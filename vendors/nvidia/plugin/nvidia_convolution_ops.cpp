// The convolutional networks' kernels (kernels/batch_norm_kernels.h, kernels/max_pool_kernels.h)
// as xpuperf's batch_norm_act and max_pool2d: in training, over channels-last activations.

#include <algorithm>

#include "kernels/batch_norm_kernels.h"
#include "kernels/max_pool_kernels.h"
#include "nvidia_ops.h"

namespace xpuperf::nvidia {
namespace {

using ops::Activation;

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
// one value a channel; the residual of x's shape, type and layout; the parameters and running
// statistics (both or neither) float.
bool batch_norm_takes(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                      const torch::Tensor& running_mean, const torch::Tensor& running_var,
                      const torch::Tensor& residual) {
  kernels::Element e{};
  if (x.dim() != 4 || !x.is_cuda() || !element_of(x, e) || !x.is_contiguous(torch::MemoryFormat::ChannelsLast) ||
      !aligned(x) || x.size(1) % kernels::pack_elements(e) != 0 || x.numel() / std::max<std::int64_t>(1, x.size(1)) < 2)
    return false;
  if (residual.defined() &&
      (residual.sizes() != x.sizes() || residual.scalar_type() != x.scalar_type() || residual.device() != x.device() ||
       !residual.is_contiguous(torch::MemoryFormat::ChannelsLast) || !aligned(residual)))
    return false;
  const auto float_channels = [&](const torch::Tensor& t) {
    return t.defined() && t.scalar_type() == torch::kFloat && t.device() == x.device() && t.is_contiguous() &&
           t.numel() == x.size(1);
  };
  if (running_mean.defined() != running_var.defined()) return false;
  return float_channels(weight) && float_channels(bias) &&
         (!running_mean.defined() || (float_channels(running_mean) && float_channels(running_var)));
}
kernels::MaxPoolShape shape_of(const torch::Tensor& x, std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
  kernels::MaxPoolShape s;
  s.batch = x.size(0), s.channels = x.size(1), s.height = x.size(2), s.width = x.size(3);
  s.kernel = static_cast<int>(kernel), s.stride = static_cast<int>(stride), s.padding = static_cast<int>(padding);
  return s;
}

// The kernels as one autograd function; kept for backward: the winners (a byte an output element).
struct KernelMaxPool : torch::autograd::Function<KernelMaxPool> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, std::int64_t kernel,
                               std::int64_t stride, std::int64_t padding) {
    kernels::Element e{};
    kernels::element_of(x, e);
    const c10::cuda::CUDAGuard guard(x.device());
    const auto s = shape_of(x, kernel, stride, padding);
    const auto layout = torch::MemoryFormat::ChannelsLast;
    auto y = torch::empty({s.batch, s.channels, s.out_height(), s.out_width()}, x.options().memory_format(layout));
    auto winner = torch::empty_like(y, y.options().dtype(torch::kByte), layout);
    kernels::check(kernels::max_pool_forward(e, x.data_ptr(), y.data_ptr(), winner.data_ptr<std::uint8_t>(), s,
                                             kernels::stream_of(x)),
                   "max_pool_forward");
    ctx->save_for_backward({winner});
    ctx->saved_data["sizes"] = x.sizes().vec();
    ctx->saved_data["window"] = std::vector<std::int64_t>{kernel, stride, padding};
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    if (!grads[0].defined()) return torch::autograd::variable_list(4);  // the output went unused: no gradient
    const auto winner = ctx->get_saved_variables()[0];
    const auto sizes = ctx->saved_data["sizes"].toIntVector();
    const auto window = ctx->saved_data["window"].toIntVector();
    const auto layout = torch::MemoryFormat::ChannelsLast;
    kernels::Element e{};
    const auto grad_y = grads[0].contiguous(layout);
    kernels::element_of(grad_y, e);
    const c10::cuda::CUDAGuard guard(grad_y.device());
    auto grad_x = torch::empty(sizes, grad_y.options().memory_format(layout));
    const auto s = shape_of(grad_x, window[0], window[1], window[2]);
    kernels::check(kernels::max_pool_backward(e, grad_y.data_ptr(), winner.data_ptr<std::uint8_t>(), grad_x.data_ptr(),
                                              s, kernels::stream_of(grad_y)),
                   "max_pool_backward");
    return {grad_x, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// A 4-d channels-last CUDA tensor of the kernels' types with whole packs of channels, a window the
// kernels take (at most 256 positions, the padding at most half of it).
bool max_pool_takes(const torch::Tensor& x, std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
  kernels::Element e{};
  return x.dim() == 4 && x.is_cuda() && kernels::element_of(x, e) &&
         x.is_contiguous(torch::MemoryFormat::ChannelsLast) && kernels::aligned(x) &&
         x.size(1) % kernels::pack_elements(e) == 0 && kernel >= 1 && kernel * kernel <= 256 && stride >= 1 &&
         padding >= 0 && 2 * padding <= kernel && x.size(2) + 2 * padding >= kernel &&
         x.size(3) + 2 * padding >= kernel && x.numel() > 0;
}

torch::Tensor cuda_batch_norm_act(const torch::Tensor& x, const OptionalTensor& weight_given,
                                  const OptionalTensor& bias_given, const OptionalTensor& running_mean_given,
                                  const OptionalTensor& running_var_given, const OptionalTensor& residual_given,
                                  std::int64_t act, bool training, double momentum, double eps) {
  const auto weight = value_of(weight_given), bias = value_of(bias_given), residual = value_of(residual_given);
  const auto running_mean = value_of(running_mean_given), running_var = value_of(running_var_given);
  const auto present = [](const torch::Tensor& t) {
    return t.defined() ? std::optional<torch::Tensor>(t) : std::optional<torch::Tensor>();
  };
  if (training && batch_norm_takes(x, weight, bias, running_mean, running_var, residual))
    return KernelBatchNorm::apply(x, weight, bias, present(residual), present(running_mean), present(running_var),
                                  momentum, eps, act);
  return ops::composite::batch_norm_act(x, weight, bias, running_mean, running_var, residual,
                                        static_cast<Activation>(act), training, momentum, eps);
}

torch::Tensor cuda_max_pool2d(const torch::Tensor& x, std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
  if (max_pool_takes(x, kernel, stride, padding)) return KernelMaxPool::apply(x, kernel, stride, padding);
  return ops::composite::max_pool2d(x, kernel, stride, padding);
}

}  // namespace

void register_convolution_ops(torch::Library& m) {
  m.impl("batch_norm_act", &cuda_batch_norm_act);
  m.impl("max_pool2d", &cuda_max_pool2d);
}

}  // namespace xpuperf::nvidia
