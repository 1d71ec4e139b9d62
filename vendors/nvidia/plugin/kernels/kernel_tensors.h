#pragma once
// What the tensor-level fronts of the CUDA kernels (models/fused_ops.cpp, models/batch_norm_act.cpp)
// share: a tensor's element type as the kernels name it, its alignment, its device's current stream,
// and a kernel's error as an exception. Included only where LibTorch has CUDA
// (XPUPERF_HAVE_TORCH_CUDA).

#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <cstdint>

#include "kernels/fused_kernels.h"

namespace xpuperf::nvidia::kernels {

inline bool element_of(torch::ScalarType type, Element& e) {
  switch (type) {
    case torch::kFloat:
      e = Element::Float;
      return true;
    case torch::kHalf:
      e = Element::Half;
      return true;
    case torch::kBFloat16:
      e = Element::BFloat16;
      return true;
    default:
      return false;
  }
}

inline bool element_of(const torch::Tensor& t, Element& e) {
  return element_of(t.scalar_type(), e);
}

inline bool aligned(const torch::Tensor& t) {
  return reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 == 0;
}

inline void* stream_of(const torch::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}

inline void check(const char* error, const char* kernel) {
  TORCH_CHECK(error == nullptr, "CUDA kernel ", kernel, " failed: ", error);
}

}  // namespace xpuperf::nvidia::kernels
