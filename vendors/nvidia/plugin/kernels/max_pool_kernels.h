#pragma once
// Max pooling over channels-last activations (ResNet's stem: 3 × 3, stride 2, padding 1) with its
// backward. ATen keeps an int64 index per output element for backward (four times the bf16 output)
// and its NHWC backward kernel takes longer than the stem's batch norm; here each output element keeps
// the byte of its window position that won, and the backward gathers, for each input element, the
// gradients of the windows it won. Torch-free like fused_kernels.h; models/max_pool.cpp is the
// autograd function with ATen's fallback. Each function returns null when launched, else CUDA's
// error text.

#include <cstdint>

#include "kernels/fused_kernels.h"

namespace xpuperf::nvidia::kernels {

// The pooling's shape: x (batch, height, width, channels) in memory, a window of kernel × kernel
// positions moved by stride, padding on each side (padded positions never win); the output
// (batch, out_height, out_width, channels) with out = (in + 2 padding − kernel) / stride + 1.
struct MaxPoolShape {
  std::int64_t batch = 0, height = 0, width = 0, channels = 0;
  int kernel = 1, stride = 1, padding = 0;
  std::int64_t out_height() const { return (height + 2 * padding - kernel) / stride + 1; }
  std::int64_t out_width() const { return (width + 2 * padding - kernel) / stride + 1; }
};

// y = the window's largest element (the first in row-major order among equals, a NaN wins, as ATen's),
// winner = its position in the window (row × kernel + column; null: not kept). Pointers 16-byte
// aligned, channels a multiple of pack_elements(type), kernel × kernel at most 256.
const char* max_pool_forward(Element type, const void* x, void* y, std::uint8_t* winner, const MaxPoolShape& shape,
                             void* stream);

// grad_x = for each input element, the sum of grad_y over the windows whose winner it was.
const char* max_pool_backward(Element type, const void* grad_y, const std::uint8_t* winner, void* grad_x,
                              const MaxPoolShape& shape, void* stream);

}  // namespace xpuperf::nvidia::kernels
