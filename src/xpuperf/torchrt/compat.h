#pragma once
// The one place where LibTorch 1.13 (Debian) and 2.x (PyTorch wheels) differ for us.

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>

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

}  // namespace xpuperf::compat
