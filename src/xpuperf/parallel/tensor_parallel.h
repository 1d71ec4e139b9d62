#pragma once
// `tensor_parallel: T`: Megatron-LM's tensor parallelism. The world's ranks form groups of T
// consecutive ranks; within a group each rank keeps 1/T of every split layer — the attention's
// heads and the MLP's hidden units: column-parallel first linears, row-parallel second ones whose
// partial outputs are summed over the group — and the rest of the model whole. Data parallelism
// runs across the groups (ranks with the same place in theirs). Megatron's two operators:
// copy_in (f: identity forward, gradients summed over the group backward) before a
// column-parallel linear, reduce_out (g: summed forward, identity backward) after a row-parallel
// one. Gradients of the whole parameters come out the same on every rank of a group.

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "xpuperf/torchrt/distributed.h"

namespace xpuperf::parallel {

class TensorParallel {
 public:
  explicit TensorParallel(std::shared_ptr<torchrt::Distributed> group) : group_(std::move(group)) {}
  int rank() const { return group_->rank(); }
  int size() const { return group_->world_size(); }
  torchrt::Distributed& group() { return *group_; }

  // Megatron's sequence parallelism (`sequence_parallel: true`): outside the split layers each rank
  // holds 1/T of the tokens of activations (batch, tokens, ...), along dimension 1. copy_in then
  // gathers them (its backward sums and scatters the gradient) and reduce_out sums and scatters (its
  // backward gathers): the same traffic as the all-reduces, and the norms and the residual stream
  // computed on a rank's tokens only. Set before the model splits.
  void set_sequence_parallel(bool on) { sequence_parallel_ = on; }
  bool sequence_parallel() const { return sequence_parallel_; }

  torch::Tensor copy_in(const torch::Tensor& x);
  torch::Tensor reduce_out(const torch::Tensor& x);
  // Identity forward, the gradient summed over the group backward (Megatron's f), whatever the
  // sequence parallelism: for a whole parameter used on a rank's tokens only (a norm's weight).
  torch::Tensor sum_gradient(const torch::Tensor& x);
  // With sequence parallelism, every rank's tokens gathered for a part of the model that each rank
  // runs whole on the same tokens (the output layer): backward keeps this rank's tokens' gradient
  // (every rank has the same). x itself without it.
  torch::Tensor gather_for_whole(const torch::Tensor& x);
  // With sequence parallelism, this rank's tokens of x, which every rank computed whole (an
  // embedding that is not split): backward gathers every rank's gradient, so that the whole
  // parameters before it get the same gradient on each rank. x itself without it.
  torch::Tensor share_of_whole(const torch::Tensor& x);
  // torch::linear(copy_in(x), weight, bias), a column-parallel product, with its backward's sum of
  // x's gradient over the group started before the weight's gradient is computed and awaited
  // after, so that the two overlap (Megatron-LM's asynchronous gradient all-reduce). With sequence
  // parallelism, x's tokens are gathered (the forward keeps only this rank's share: backward
  // gathers them again beside the input gradient's product) and x's gradient is reduce-scattered
  // beside the weight gradient's product. The same values and gradients as the two apart.
  torch::Tensor column_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

 private:
  std::shared_ptr<torchrt::Distributed> group_;
  bool sequence_parallel_ = false;
};

// A whole parameter (a norm's weight or bias, a row-parallel layer's bias) as a part of the model
// that runs on a rank's share of the tokens uses it: with the group's sequence parallelism its
// gradient is summed over the group (sum_gradient). p itself without, or when `group` is null.
torch::Tensor whole_parameter(TensorParallel* group, const torch::Tensor& p);
// norm(x), its weight and bias through whole_parameter; norm(x) itself when `sequence` is null.
torch::Tensor layer_norm(torch::nn::LayerNorm norm, const torch::Tensor& x, TensorParallel* sequence);

// What a model's split says of a size it cannot share over `tp`: throws std::invalid_argument
// "tensor_parallel T does not divide <whose> <count> <what>" unless T divides `count`
// (whose: "BERT's"; what: "attention heads (num_attention_heads)", naming the config key).
void require_divides(const TensorParallel& tp, std::int64_t count, const std::string& whose, const std::string& what);

// A model whose layers can be split over a tensor-parallel group. The runtime calls this (the
// cases never do) once the whole model is the same on every rank.
class TensorParallelModel {
 public:
  virtual ~TensorParallelModel() = default;
  // Keeps this rank's part of every split layer (the layer types of parallel_linear.h, which also
  // say which parameters are split). Throws std::invalid_argument when the model's sizes (heads,
  // hidden units) do not divide by the group's size.
  virtual void split_for_tensor_parallel(std::shared_ptr<TensorParallel> tp) = 0;
  // Whether the split runs with the group's sequence parallelism on (its norms on a rank's tokens).
  virtual bool takes_sequence_parallel() const { return false; }
};

// The global L2 norm of the gradients of a model split over a group (`split_group`: a tensor- or
// expert-parallel group, null without one: `split` parameters differ over it, the others are the
// same on each of its ranks)
// and over pipeline stages (`stages`, null without: each stage holds its own parameters;
// `counted_elsewhere` are copies another stage counts, as the last stage's tied embedding).
torch::Tensor model_parallel_gradient_norm(const std::vector<torch::Tensor>& params,
                                           const std::vector<torch::Tensor>& split, torchrt::Distributed* split_group,
                                           torchrt::Distributed* stages,
                                           const std::vector<torch::Tensor>& counted_elsewhere);

}  // namespace xpuperf::parallel
