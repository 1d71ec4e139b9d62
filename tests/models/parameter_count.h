#pragma once
// What the model tests compare with the reference implementations' counts, and the weights they
// start two models of one layout from.

#include <torch/torch.h>

#include <cstdint>

namespace xpuperf::models {

inline std::int64_t parameters(const torch::nn::Module& m) {
  std::int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

// `to` takes `from`'s parameters (the same layout), so that two variants start from the same weights.
inline void copy_parameters(const torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  const auto source = from.parameters(), target = to.parameters();
  TORCH_CHECK(source.size() == target.size(), "copy_parameters: the models' layouts differ");
  for (std::size_t i = 0; i < source.size(); ++i) target[i].copy_(source[i]);
}

}  // namespace xpuperf::models
