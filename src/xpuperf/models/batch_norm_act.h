#pragma once
// A batch norm with what follows it in the convolutional networks: act(BN(x) + residual), ResNet's
// BN + ReLU and BN + residual add + ReLU, MobileNetV2's BN + ReLU6 and BN + residual add. In
// training, on CUDA, with channels-last activations (the channels_last switch), `use_kernels` runs
// it as the batch norm kernels (models/cuda/batch_norm_kernels.h): two passes forward and two back
// where ATen's operators take four and four, and only x and the output kept for backward. Elsewhere
// (evaluation, the CPU, NCHW, types or widths the kernels do not take) ATen's operators, which the
// kernels follow: the same statistics, running statistics and gradients to a rounding or two.

#include <torch/torch.h>

namespace xpuperf::models::fused {

enum class Activation { None, Relu, Relu6 };

// act(bn(x) + residual) (residual undefined: no add), updating bn's running statistics and its
// count of batches in training as bn's forward does.
torch::Tensor batch_norm_act(const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& residual,
                             Activation act, bool use_kernels);

}  // namespace xpuperf::models::fused
