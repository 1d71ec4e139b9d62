#pragma once
// LeNet-5 and Fashion-MNIST's test and training sets as tensors: shared by the training case
// (this folder) and the inference case (cases/inference/lenet5), so that a checkpoint saved by
// one loads in the other.

#include <torch/torch.h>

#include <string>

#include "xpuperf/data/idx.h"

namespace xpuperf::cases {

// Fashion-MNIST's training-set pixel mean and standard deviation (of values scaled to 0..1).
constexpr double kPixelMean = 0.2860;
constexpr double kPixelStd = 0.3530;
constexpr int kClasses = 10;

// LeNet-5 with ReLU and max pooling: conv(1→6, 5×5, pad 2) → pool → conv(6→16, 5×5) → pool →
// fc 400→120 → fc 120→84 → fc 84→10.
struct LeNet5Impl : torch::nn::Module {
  torch::nn::Conv2d conv1{torch::nn::Conv2dOptions(1, 6, 5).padding(2)};
  torch::nn::Conv2d conv2{torch::nn::Conv2dOptions(6, 16, 5)};
  torch::nn::Linear fc1{16 * 5 * 5, 120}, fc2{120, 84}, fc3{84, kClasses};

  LeNet5Impl() {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_module("fc3", fc3);
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    x = x.flatten(1);
    x = torch::relu(fc1(x));
    x = torch::relu(fc2(x));
    return fc3(x);
  }

  // Multiply-accumulates of one forward pass, from the layer shapes.
  static double forward_macs() {
    const double conv1_macs = 28.0 * 28 * 6 * (1 * 5 * 5);
    const double conv2_macs = 10.0 * 10 * 16 * (6 * 5 * 5);
    const double fc_macs = 400.0 * 120 + 120.0 * 84 + 84.0 * kClasses;
    return conv1_macs + conv2_macs + fc_macs;
  }
};
TORCH_MODULE(LeNet5);

struct FashionMnist {
  torch::Tensor images;  // n x 1 x 28 x 28, float, normalised
  torch::Tensor labels;  // n, int64
  std::string description;
};

// Reads <prefix>-images-idx3-ubyte[.gz] and the labels under `dir`; throws data::DataError.
inline FashionMnist load_fashion_mnist(const std::string& dir, const std::string& prefix) {
  const data::IdxImageSet set = data::read_idx_image_set(dir, prefix, kClasses);
  if (set.images.shape[1] != 28 || set.images.shape[2] != 28)
    throw data::DataError(set.images.path + ": images are " + std::to_string(set.images.shape[1]) + "x" +
                          std::to_string(set.images.shape[2]) + ", Fashion-MNIST's are 28x28");
  const std::int64_t n = set.images.shape[0];
  auto images = torch::from_blob(const_cast<std::uint8_t*>(set.images.values.data()), {n, 1, 28, 28}, torch::kUInt8)
                    .to(torch::kFloat)
                    .div_(255.0)
                    .sub_(kPixelMean)
                    .div_(kPixelStd);
  auto labels =
      torch::from_blob(const_cast<std::uint8_t*>(set.labels.values.data()), {n}, torch::kUInt8).to(torch::kLong);
  return {images, labels, std::to_string(n) + " images from " + set.images.path};
}

}  // namespace xpuperf::cases
