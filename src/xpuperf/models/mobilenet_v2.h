#pragma once
// MobileNetV2 (Sandler et al.), laid out and named as torchvision's mobilenet_v2, so that its
// state_dict loads unchanged: width 1.0, 1000 classes, 3,504,872 parameters.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace xpuperf::models {

// features.<i>.conv: [expand 1×1 conv-bn-relu6,] depthwise 3×3 conv-bn-relu6, project 1×1 conv, bn.
struct InvertedResidualImpl : torch::nn::Module {
  InvertedResidualImpl(std::int64_t in, std::int64_t out, std::int64_t stride, std::int64_t expand_ratio);
  torch::Tensor forward(const torch::Tensor& x);

  bool residual;
  bool fused_kernels = false;
  torch::nn::Sequential conv{nullptr};
};
TORCH_MODULE(InvertedResidual);

struct MobileNetV2Impl : torch::nn::Module {
  explicit MobileNetV2Impl(std::int64_t classes = 1000, double dropout = 0.2);
  torch::Tensor forward(const torch::Tensor& images);

  // Multiply-adds × 2 of one image's forward pass at `image_size` (convolutions and the classifier).
  double forward_flops(std::int64_t image_size = 224) const;

  // Training's batch norms (with ReLU6, and the residual add after the projection's) as the batch norm
  // kernels where they apply (batch_norm_act.h), or ATen's operators.
  void use_fused_kernels(bool on);

  std::int64_t classes;
  torch::nn::Sequential features{nullptr}, classifier{nullptr};
};
TORCH_MODULE(MobileNetV2);

}  // namespace xpuperf::models
