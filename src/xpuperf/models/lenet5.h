#pragma once
// LeNet-5, the quickstart's model: shared by the training case (cases/training/lenet5) and the
// inference case (cases/inference/lenet5), so that a checkpoint saved by one loads in the other.

#include <torch/torch.h>

namespace xpuperf::models {

constexpr int kLeNet5Classes = 10;

// LeNet-5 with ReLU and max pooling: conv(1→6, 5×5, pad 2) → pool → conv(6→16, 5×5) → pool →
// fc 400→120 → fc 120→84 → fc 84→10.
struct LeNet5Impl : torch::nn::Module {
  torch::nn::Conv2d conv1{torch::nn::Conv2dOptions(1, 6, 5).padding(2)};
  torch::nn::Conv2d conv2{torch::nn::Conv2dOptions(6, 16, 5)};
  torch::nn::Linear fc1{16 * 5 * 5, 120}, fc2{120, 84}, fc3{84, kLeNet5Classes};

  LeNet5Impl();
  torch::Tensor forward(torch::Tensor x);

  // Multiply-accumulates of one forward pass, from the layer shapes.
  static double forward_macs();
};
TORCH_MODULE(LeNet5);

}  // namespace xpuperf::models
