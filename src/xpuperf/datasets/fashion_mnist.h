#pragma once
// Fashion-MNIST's training and test sets as tensors, normalised by the training set's pixel mean and
// standard deviation (what the lenet5 cases train and infer on).

#include <torch/torch.h>

#include <string>

namespace xpuperf::datasets {

// Fashion-MNIST's training-set pixel mean and standard deviation (of values scaled to 0..1).
constexpr double kFashionMnistPixelMean = 0.2860;
constexpr double kFashionMnistPixelStd = 0.3530;
constexpr int kFashionMnistClasses = 10;

struct FashionMnist {
  torch::Tensor images;  // n x 1 x 28 x 28, float, normalised
  torch::Tensor labels;  // n, int64
  std::string description;
};

// Reads <prefix>-images-idx3-ubyte[.gz] and the labels under `dir`; throws data::DataError.
FashionMnist load_fashion_mnist(const std::string& dir, const std::string& prefix);

}  // namespace xpuperf::datasets
