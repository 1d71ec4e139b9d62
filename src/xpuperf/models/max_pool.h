#pragma once
// Max pooling as ResNet's stem runs it (max_pool2d(x, kernel, stride, padding)). With `use_kernels`,
// on CUDA, over channels-last activations of the kernels' types: the max pool kernels
// (models/cuda/max_pool_kernels.h), which keep a byte a position for backward where ATen keeps an
// int64, and gather the gradient where ATen's channels-last backward is slow. Elsewhere ATen's
// max_pool2d; both give the same values and gradients (ties go to the first position of the window).

#include <torch/torch.h>

#include <cstdint>

namespace xpuperf::models::fused {

torch::Tensor max_pool2d(const torch::Tensor& x, std::int64_t kernel, std::int64_t stride, std::int64_t padding,
                         bool use_kernels);

}  // namespace xpuperf::models::fused
