#pragma once
// Max pooling as ResNet's stem runs it (max_pool2d(x, kernel, stride, padding)). With `use_kernels`,
// xpuperf's max_pool2d operator (ops/operators.h), which runs the device's kernel where there is one:
// NVIDIA's, over channels-last activations, keeps a byte a position for backward where ATen keeps an
// int64, and gathers the gradient where ATen's channels-last backward is slow. Elsewhere ATen's
// max_pool2d; both give the same values and gradients (ties go to the first position of the window).

#include <torch/torch.h>

#include <cstdint>

namespace xpuperf::models::fused {

torch::Tensor max_pool2d(const torch::Tensor& x, std::int64_t kernel, std::int64_t stride, std::int64_t padding,
                         bool use_kernels);

}  // namespace xpuperf::models::fused
