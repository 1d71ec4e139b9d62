// The training kernels with a backward kernel each (kernels/training_kernels.h) as xpuperf's
// cross_entropy, bias_gelu and silu_mul.pair, and bf16_weights' Adam step (kernels/master_adam.h)
// as its master_adam_step.

#include "kernels/master_adam.h"
#include "kernels/training_kernels.h"
#include "nvidia_ops.h"

namespace xpuperf::nvidia {
namespace {

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

torch::Tensor cuda_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, bool gradient_in_logits) {
  if (auto done = kernel_cross_entropy(logits, targets, gradient_in_logits)) return *done;
  return ops::composite::cross_entropy(logits, targets);
}

torch::Tensor cuda_bias_gelu(const torch::Tensor& h, const torch::Tensor& bias, bool erf) {
  if (auto done = kernel_bias_gelu(h, bias, erf)) return *done;
  return ops::composite::bias_gelu(h, bias, erf);
}

torch::Tensor cuda_silu_mul_pair(const torch::Tensor& gate, const torch::Tensor& up) {
  if (auto done = kernel_silu_mul_with_backward(gate, up)) return *done;
  return ops::composite::silu_mul(gate, up);
}

// One pass a tensor where the kernel takes them: float master and moments, a bf16 gradient and
// weight, all contiguous on one device.
void cuda_master_adam_step(const torch::Tensor& master, const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq,
                           const torch::Tensor& grad, const torch::Tensor& weight, double lr, double beta1,
                           double beta2, double eps, double weight_decay, bool decoupled, double bias_correction1,
                           double bias_correction2_sqrt, const OptionalTensor& grad_divisor) {
  const auto divisor = value_of(grad_divisor);
  const auto fits = [&](const torch::Tensor& t, torch::ScalarType type) {
    return t.is_cuda() && t.scalar_type() == type && t.is_contiguous() && t.device() == weight.device() &&
           t.numel() == weight.numel();
  };
  if (!fits(master, torch::kFloat) || !fits(exp_avg, torch::kFloat) || !fits(exp_avg_sq, torch::kFloat) ||
      !fits(grad, torch::kBFloat16) || !fits(weight, torch::kBFloat16) ||
      (divisor.defined() && (!divisor.is_cuda() || divisor.scalar_type() != torch::kFloat || divisor.numel() != 1))) {
    ops::composite::master_adam_step(
        master, exp_avg, exp_avg_sq, grad, weight,
        {lr, beta1, beta2, eps, weight_decay, decoupled, bias_correction1, bias_correction2_sqrt}, divisor);
    return;
  }
  kernels::MasterAdam a;
  a.lr = static_cast<float>(lr), a.beta1 = static_cast<float>(beta1), a.beta2 = static_cast<float>(beta2);
  a.eps = static_cast<float>(eps), a.weight_decay = static_cast<float>(weight_decay), a.decoupled = decoupled;
  a.bias_correction1 = static_cast<float>(bias_correction1);
  a.bias_correction2_sqrt = static_cast<float>(bias_correction2_sqrt);
  a.grad_divisor = divisor.defined() ? divisor.data_ptr<float>() : nullptr;
  const c10::cuda::CUDAGuard guard(weight.device());
  check(kernels::master_adam_step(a, master.data_ptr<float>(), exp_avg.data_ptr<float>(), exp_avg_sq.data_ptr<float>(),
                                  grad.data_ptr(), weight.data_ptr(), weight.numel(), stream_of(weight)),
        "master_adam_step");
}

}  // namespace

void register_training_ops(torch::Library& m) {
  m.impl("master_adam_step", &cuda_master_adam_step);
  m.impl("cross_entropy", &cuda_cross_entropy);
  m.impl("bias_gelu", &cuda_bias_gelu);
  m.impl("silu_mul.pair", &cuda_silu_mul_pair);
}

}  // namespace xpuperf::nvidia
