#pragma once
// Weights of several products that read one input, stacked into one matrix so that inference runs
// them as one product (the Llama decoder's q/k/v and gate/up, BERT's q/k/v): each part's parameter
// becomes a view of its rows, so the parameters (and a checkpoint of them) stay as they were.

#include <torch/torch.h>

#include <vector>

namespace xpuperf::models {

// `parts` (out_i, ...) stacked into one (Σ out_i, ...) tensor; each part becomes its view.
inline torch::Tensor stack_weights(const std::vector<torch::Tensor*>& parts) {
  const torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> values;
  for (auto* p : parts) values.push_back(*p);
  const auto stacked = torch::cat(values, 0);
  std::int64_t at = 0;
  for (auto* p : parts) {
    const auto rows = p->size(0);
    p->set_data(stacked.narrow(0, at, rows));
    at += rows;
  }
  return stacked;
}

// Still the tensor the parts are views of (a move to another device or type makes copies).
inline bool still_stacked(const torch::Tensor& stacked, const torch::Tensor& first) {
  return stacked.defined() && first.defined() && stacked.data_ptr() == first.data_ptr() &&
         stacked.dtype() == first.dtype();
}

}  // namespace xpuperf::models
