#pragma once
// What the model tests compare with the reference implementations' counts.

#include <torch/torch.h>

#include <cstdint>

namespace xpuperf::models {

inline std::int64_t parameters(const torch::nn::Module& m) {
  std::int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

}  // namespace xpuperf::models
