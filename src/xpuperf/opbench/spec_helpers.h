#pragma once
// What the catalogue's operator specs share (operators.cpp, kernel_operators.cpp,
// more_operators.cpp): the inputs' draw and the sizes' arithmetic of the formulas.

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace xpuperf::opbench {

// Values of N(0, 1) from the case's generator, on the CPU in float32.
inline torch::Tensor standard_normal(torch::IntArrayRef shape, torch::Generator& gen) {
  return at::normal(0.0, 1.0, shape, gen);
}

// The product of a shape's sizes: its element count.
inline double product(const std::vector<std::int64_t>& sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), 1.0,
                         [](double a, std::int64_t b) { return a * static_cast<double>(b); });
}

inline double largest(const std::vector<std::int64_t>& sizes) {
  return static_cast<double>(*std::max_element(sizes.begin(), sizes.end()));
}

}  // namespace xpuperf::opbench
