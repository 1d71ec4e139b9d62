#pragma once
// NVIDIA's kernels for xpuperf's operators (src/xpuperf/ops/operators.h), as the dispatcher calls
// them for CUDA tensors: each takes the inputs its CUDA kernels take (kernels/: the tensor's type,
// layout, alignment and shape) and hands the others to the composite operator
// (ops/composite.h), so a CUDA tensor always gets an answer. They are registered for the CUDA key and
// for AutogradCUDA (nvidia_ops.cpp): the kernels with a backward are autograd functions of their
// own, and the forward-only ones step aside while autograd records.

#include <ATen/record_function.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "kernels/kernel_tensors.h"
#include "xpuperf/ops/composite.h"

namespace xpuperf::nvidia {

using OptionalTensor = c10::optional<torch::Tensor>;
// What every file of the plug-in's fronts reaches for.
using kernels::aligned;
using kernels::check;
using kernels::element_of;
using kernels::stream_of;
using ops::switched_off;

inline torch::Tensor value_of(const OptionalTensor& t) {
  return t.has_value() ? *t : torch::Tensor();
}
inline std::optional<torch::ScalarType> std_optional(const c10::optional<torch::ScalarType>& t) {
  return t.has_value() ? std::optional<torch::ScalarType>(*t) : std::nullopt;
}

// A contiguous CUDA tensor of the kernels' types, 16-byte aligned, its last dimension whole packs.
inline bool packable(const torch::Tensor& t, std::int64_t width, kernels::Element& e) {
  return t.is_cuda() && t.is_contiguous() && element_of(t, e) && width % kernels::pack_elements(e) == 0 && aligned(t);
}

// Launches an inference kernel (`launch` returns CUDA's error text or null) as an operator of its own
// to LibTorch's RecordFunction callbacks, so that the op profile (profile_batches) times the kernel
// itself inside the xpuperf operator's span; throws on a launch error. (The training kernels are
// timed by profile_steps' Kineto profile, by kernel name.)
template <typename Launch>
void run_kernel(const char* name, Launch&& launch) {
  RECORD_FUNCTION(name, std::vector<c10::IValue>());
  check(launch(), name);
}

// Whether autograd records an operation on these tensors: the kernels without a backward then leave
// the work to the composite operators or to the kernels with one, so that training gets the right
// gradients.
inline bool recording(std::initializer_list<torch::Tensor> tensors) {
  if (!torch::GradMode::is_enabled()) return false;
  for (const auto& t : tensors)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

// Each registers its operators' CUDA implementations on `m` (the CUDA key's library, then
// AutogradCUDA's).
void register_norm_ops(torch::Library& m);         // add_rms_norm, add_layer_norm(_with_copy)
void register_decode_ops(torch::Library& m);       // rotary_qkv, linear(_rotary_qkv, _silu_mul), decode_attention,
                                                   // argmax, silu_mul
void register_training_ops(torch::Library& m);     // cross_entropy, bias_gelu, silu_mul.pair, master_adam_step
void register_convolution_ops(torch::Library& m);  // batch_norm_act, max_pool2d

}  // namespace xpuperf::nvidia
