#include "xpuperf/models/vocabulary_output.h"

#include <cmath>

#include "xpuperf/models/fused_ops.h"

namespace xpuperf::models {

torch::Tensor vocabulary_logits(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& bias,
                                bool aligned) {
  const std::int64_t vocab = weight.size(0), pad = (64 - vocab % 64) % 64;
  if (!aligned || pad == 0) return torch::linear(hidden, weight, bias);
  const auto real_bias = bias.defined() ? bias : torch::zeros({vocab}, weight.options());
  return torch::linear(hidden, torch::constant_pad_nd(weight, {0, 0, 0, pad}),
                       torch::constant_pad_nd(real_bias, {0, pad}, -INFINITY));
}

torch::Tensor token_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, bool use_kernels) {
  return fused::cross_entropy(logits, targets, use_kernels, /*gradient_in_logits=*/true);
}

}  // namespace xpuperf::models
