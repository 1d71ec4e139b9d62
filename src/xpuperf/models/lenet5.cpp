#include "xpuperf/models/lenet5.h"

namespace xpuperf::models {

LeNet5Impl::LeNet5Impl() {
  register_module("conv1", conv1);
  register_module("conv2", conv2);
  register_module("fc1", fc1);
  register_module("fc2", fc2);
  register_module("fc3", fc3);
}

torch::Tensor LeNet5Impl::forward(torch::Tensor x) {
  x = torch::max_pool2d(torch::relu(conv1(x)), 2);
  x = torch::max_pool2d(torch::relu(conv2(x)), 2);
  x = x.flatten(1);
  x = torch::relu(fc1(x));
  x = torch::relu(fc2(x));
  return fc3(x);
}

double LeNet5Impl::forward_macs() {
  const double conv1_macs = 28.0 * 28 * 6 * (1 * 5 * 5);
  const double conv2_macs = 10.0 * 10 * 16 * (6 * 5 * 5);
  const double fc_macs = 400.0 * 120 + 120.0 * 84 + 84.0 * kLeNet5Classes;
  return conv1_macs + conv2_macs + fc_macs;
}

}  // namespace xpuperf::models
