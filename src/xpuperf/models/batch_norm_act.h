#pragma once
// A batch norm with what follows it in the convolutional networks: act(BN(x) + residual), ResNet's
// BN + ReLU and BN + residual add + ReLU, MobileNetV2's BN + ReLU6 and BN + residual add. With
// `use_kernels`, xpuperf's batch_norm_act operator (ops/operators.h), which runs the device's kernel
// where there is one: NVIDIA's, in training over channels-last activations (the channels_last switch),
// is two passes forward and two back where ATen's operators take four and four, and keeps only x and
// the output for backward. Elsewhere ATen's operators, which the kernels follow: the same statistics,
// running statistics and gradients to a rounding or two.

#include <torch/torch.h>

#include "xpuperf/ops/operators.h"

namespace xpuperf::models::fused {

using Activation = ops::Activation;

// act(bn(x) + residual) (residual undefined: no add), updating bn's running statistics and its
// count of batches in training as bn's forward does.
torch::Tensor batch_norm_act(const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& residual,
                             Activation act, bool use_kernels);

}  // namespace xpuperf::models::fused
