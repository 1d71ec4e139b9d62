#pragma once
// A torch::nn::Linear applied through ATen's linear operator. LibTorch's C++ Linear module (and
// torch::nn::functional::linear) multiplies an input of more than two dimensions with matmul and
// adds the bias in a separate add_ kernel, where ATen's linear (what Python's nn.Linear calls)
// flattens the rows and adds the bias inside the GEMM (addmm). Measured on an H200, that add_ was
// 23 % of ViT-L/16's GPU time at batch 32.

#include <torch/torch.h>

namespace xpuperf::models {

inline torch::Tensor linear(const torch::nn::LinearImpl& layer, const torch::Tensor& x) {
  return torch::linear(x, layer.weight, layer.bias);
}

}  // namespace xpuperf::models
