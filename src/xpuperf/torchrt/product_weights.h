#pragma once
// The weights a model only ever uses as an operand of a product that runs in bf16 under bf16 autocast
// (`bf16_weights: true`, train/optimizers.h): stored in bf16 they give the forward and backward that
// autocast's casts of their fp32 copies give, without the casts.

#include <torch/torch.h>

#include <vector>

namespace xpuperf::torchrt {

// A module whose own forward runs some of its parameters in products of the autocast type only (a
// mixture of experts' weights, cast to bf16 for grouped or batched products).
struct HasProductWeights {
  virtual ~HasProductWeights() = default;
  virtual std::vector<torch::Tensor> product_weights() = 0;
};

// The weights (not the biases) of the model's Linear layers, and what its HasProductWeights modules
// name, each once; a weight an Embedding shares (a tied output layer) is left out, as embedding
// lookups stay in the parameter's type under autocast.
std::vector<torch::Tensor> product_weights(torch::nn::Module& model);

}  // namespace xpuperf::torchrt
