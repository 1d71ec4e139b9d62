#pragma once
// The one place where LibTorch 1.13 (Debian) and 2.x (PyTorch wheels) differ for us.

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <variant>
#include <vector>

namespace xpuperf::compat {

inline constexpr bool kTorch2 = TORCH_VERSION_MAJOR >= 2;

// Gives PrivateUse1 the vendor's name, so that LibTorch itself says "npu:0" and parses "npu"
// (2.1 and later). LibTorch 1.13 keeps "privateuseone"; device_text() translates for it.
inline void name_privateuse1(const std::string& name) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  c10::register_privateuse1_backend(name);
#else
  (void)name;
#endif
}

inline bool autocast_enabled(c10::DeviceType device) {
#if TORCH_VERSION_MAJOR >= 2
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

inline void set_autocast_enabled(c10::DeviceType device, bool enabled) {
#if TORCH_VERSION_MAJOR >= 2
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == c10::DeviceType::CUDA)
    at::autocast::set_enabled(enabled);
  else
    at::autocast::set_cpu_enabled(enabled);
#endif
}

inline at::ScalarType autocast_dtype(c10::DeviceType device) {
#if TORCH_VERSION_MAJOR >= 2
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                         : at::autocast::get_autocast_cpu_dtype();
#endif
}

inline void set_autocast_dtype(c10::DeviceType device, at::ScalarType dtype) {
#if TORCH_VERSION_MAJOR >= 2
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CUDA)
    at::autocast::set_autocast_gpu_dtype(dtype);
  else
    at::autocast::set_autocast_cpu_dtype(dtype);
#endif
}

// ATen's fused unscale-and-check kernel: CUDA only in 1.13, CPU and CUDA in 2.x.
inline bool has_fused_unscale(c10::DeviceType device) {
  return kTorch2 || device == c10::DeviceType::CUDA;
}

// CPU autocast knows only bfloat16 in 1.13.
inline bool cpu_autocast_supports_fp16() {
  return kTorch2;
}

// While it lives, scaled dot-product attention leaves out cuDNN's backend (flash or memory-efficient
// attention then). cuDNN's attention builds an execution plan on the host for each new shape, tens of
// milliseconds each; a serving engine's prompt chunks come in every length, and paid that step
// after step with the device idle. Without the switch (1.13, before 2.3) there is nothing to leave out.
class AttentionWithoutCudnn {
 public:
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  AttentionWithoutCudnn() : was_(at::globalContext().userEnabledCuDNNSDP()) {
    at::globalContext().setSDPUseCuDNN(false);
  }
  ~AttentionWithoutCudnn() {
    at::globalContext().setSDPUseCuDNN(was_);
  }

 private:
  bool was_;
#else
  AttentionWithoutCudnn() {}   // not trivial: a guard that does nothing here is still a used variable
  ~AttentionWithoutCudnn() {}  // NOLINT(modernize-use-equals-default)
#endif
  AttentionWithoutCudnn(const AttentionWithoutCudnn&) = delete;
  AttentionWithoutCudnn& operator=(const AttentionWithoutCudnn&) = delete;
};

// softmax(q kᵀ / √d) v over (batch, heads, tokens, head_dim): the fused kernel (flash or
// memory-efficient attention) in 2.x, the plain three operations in 1.13. `causal`: a token sees
// itself and the ones before it (GPT); `keep`: a boolean mask broadcast to (batch, heads, tokens,
// tokens), true where a key takes part (BERT's padding), or a floating one added to the scores
// (0 or −inf: made once for every layer of a decode step).
inline torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double dropout,
                               bool training, bool causal = false, const torch::Tensor& keep = {}) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, keep.defined() ? c10::optional<at::Tensor>(keep) : c10::nullopt,
                                          training ? dropout : 0.0, causal);
#else
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (causal) {
    const auto t = q.size(-2);
    scores = scores.masked_fill(torch::ones({t, t}, q.options().dtype(torch::kBool)).triu(1), -INFINITY);
  }
  if (keep.defined())
    scores = keep.is_floating_point() ? scores + keep : scores.masked_fill(keep.logical_not(), -INFINITY);
  auto weights = torch::softmax(scores, -1);
  if (dropout > 0 && training) weights = torch::dropout(weights, dropout, true);
  return torch::matmul(weights, v);
#endif
}

// x / sqrt(mean(x²) + eps) × weight over the last dimension, computed in float32 and cast back
// before the weight (Hugging Face's LlamaRMSNorm): ATen's own (fused on CUDA) from 2.4.
inline torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return at::rms_norm(x, {x.size(-1)}, weight, eps);
#else
  const auto y = x.to(torch::kFloat);
  return weight * (y * torch::rsqrt(y.pow(2).mean(-1, true) + eps)).to(x.scalar_type());
#endif
}

// A variant's alternative, or null: LibTorch's options hold std::variant in 2.x, c10::variant in 1.13.
template <typename T, typename Variant>
const T* variant_get_if(const Variant* v) {
#if TORCH_VERSION_MAJOR >= 2
  return std::get_if<T>(v);
#else
  return c10::get_if<T>(v);
#endif
}

// A Kineto event's duration in milliseconds (2.x counts nanoseconds, 1.13 microseconds). A template,
// so that this header does without the profiler's.
template <typename Event>
double event_duration_ms(const Event& e) {
#if TORCH_VERSION_MAJOR >= 2
  return static_cast<double>(e.durationNs()) / 1e6;
#else
  return static_cast<double>(e.durationUs()) / 1e3;
#endif
}

// ATen's fused multi-tensor optimizer kernels, as PyTorch's fused=True optimizers run them: 2.x
// only (fused_optimizer: fused is refused with 1.13). Called where absent, they throw.
inline constexpr bool kHasFusedOptimizers = kTorch2;

// SGD with momentum (the buffers empty for none), no dampening or Nesterov; `first`: the buffers
// start as the gradients.
inline void fused_sgd_(at::TensorList params, at::TensorList grads, at::TensorList momentum_buffers,
                       double weight_decay, double momentum, double lr, bool first) {
#if TORCH_VERSION_MAJOR >= 2
  at::_fused_sgd_(params, grads, momentum_buffers, weight_decay, momentum, lr, /*dampening=*/0.0, /*nesterov=*/false,
                  /*maximize=*/false, first);
#else
  (void)params, (void)grads, (void)momentum_buffers, (void)weight_decay, (void)momentum, (void)lr, (void)first;
  TORCH_CHECK(false, "ATen's fused SGD needs LibTorch 2.x");
#endif
}

// Adam, or AdamW where `decoupled`; the gradients divided by `grad_scale` where given, and nothing
// changed where `found_inf` is set.
inline void fused_adam_(bool decoupled, at::TensorList params, at::TensorList grads, at::TensorList exp_avgs,
                        at::TensorList exp_avg_sqs, at::TensorList steps, double lr, double beta1, double beta2,
                        double weight_decay, double eps, const c10::optional<at::Tensor>& grad_scale,
                        const c10::optional<at::Tensor>& found_inf) {
#if TORCH_VERSION_MAJOR >= 2
  if (decoupled)
    at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, {}, steps, lr, beta1, beta2, weight_decay, eps,
                      /*amsgrad=*/false, /*maximize=*/false, grad_scale, found_inf);
  else
    at::_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, {}, steps, lr, beta1, beta2, weight_decay, eps,
                     /*amsgrad=*/false, /*maximize=*/false, grad_scale, found_inf);
#else
  (void)decoupled, (void)params, (void)grads, (void)exp_avgs, (void)exp_avg_sqs, (void)steps, (void)lr, (void)beta1,
      (void)beta2, (void)weight_decay, (void)eps, (void)grad_scale, (void)found_inf;
  TORCH_CHECK(false, "ATen's fused Adam needs LibTorch 2.x");
#endif
}

// Each tensor's L2 norm in float: one multi-tensor launch from 2.6, a reduction a tensor before.
inline std::vector<torch::Tensor> float_norms(const std::vector<torch::Tensor>& tensors) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
  if (!tensors.empty()) return at::_foreach_norm(tensors, 2, torch::kFloat);
  return {};
#else
  std::vector<torch::Tensor> norms;
  for (const auto& t : tensors) norms.push_back(t.to(torch::kFloat).norm());
  return norms;
#endif
}

// Multiplies each tensor by a one-element tensor read on the device: one launch in 2.x (no sync),
// a multiply a tensor in 1.13.
inline void mul_each_(const std::vector<torch::Tensor>& tensors, const torch::Tensor& factor) {
#if TORCH_VERSION_MAJOR >= 2
  if (!tensors.empty()) at::_foreach_mul_(tensors, factor);
#else
  for (auto t : tensors) t.mul_(factor);
#endif
}

// ATen's grouped GEMM (at::_grouped_mm, with its backward), from 2.9: a (rows, k) by each group's
// (k, n) of b, the groups' rows ending at `offsets`.
inline constexpr bool kHasGroupedMm = TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 9);
inline torch::Tensor grouped_mm(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& offsets) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 9)
  return at::_grouped_mm(a, b, offsets);
#else
  (void)a, (void)b, (void)offsets;
  TORCH_CHECK(false, "ATen's grouped GEMM needs LibTorch 2.9 or later");
#endif
}

}  // namespace xpuperf::compat
