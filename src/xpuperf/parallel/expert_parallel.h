#pragma once
// `expert_parallel: E`: groups of E consecutive data-parallel ranks share each mixture-of-experts
// layer's experts, 1/E of them a rank (GShard's expert parallelism). Every rank routes its own tokens
// into per-expert buffers of one capacity; an all-to-all over the group sends each expert's buffer
// to the rank that holds the expert, which runs all the tokens it received as one batched product,
// and a second all-to-all brings the outputs back. Both exchanges are differentiable (the gradients
// travel the other way). The experts' gradients are summed over the ranks that hold the same
// experts (one in each group) and divided by the world's ranks, so that every parameter gets the
// data-parallel mean over every rank's loss — the same step as without the split.

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "xpuperf/torchrt/distributed.h"

namespace xpuperf::parallel {

class ExpertParallel {
 public:
  // group: this rank's group of E ranks; replicas: the ranks that hold the same experts (this rank's
  // place in every group), null where there is one group.
  ExpertParallel(std::shared_ptr<torchrt::Distributed> group, std::shared_ptr<torchrt::Distributed> replicas)
      : group_(std::move(group)), replicas_(std::move(replicas)) {}
  int rank() const { return group_->rank(); }
  int size() const { return group_->world_size(); }
  torchrt::Distributed& group() { return *group_; }

  // buffers (experts, capacity, hidden): this rank's tokens for every expert → (experts / E,
  // E × capacity, hidden): this rank's experts' tokens from each rank of the group, rank by rank.
  torch::Tensor dispatch(const torch::Tensor& buffers);
  // The inverse: this rank's experts' outputs (experts / E, E × capacity, hidden) → every expert's
  // outputs for this rank's tokens (experts, capacity, hidden).
  torch::Tensor combine(const torch::Tensor& outputs);
  // The largest `value` over the group (the buffers' capacity must be one on every rank), computed on
  // a tensor of `options` (the collectives' device).
  std::int64_t max_over_group(std::int64_t value, const torch::TensorOptions& options);
  // After backward: the experts' gradients summed over the replicas and divided by the world's ranks.
  void reduce_expert_gradients(const std::vector<torch::Tensor>& experts);

 private:
  std::shared_ptr<torchrt::Distributed> group_, replicas_;
};

// A model whose mixture-of-experts layers can be split over an expert-parallel group.
class ExpertParallelModel {
 public:
  virtual ~ExpertParallelModel() = default;
  // Keeps this rank's experts of every sparse layer (the runtime calls it once the whole model is the
  // same on every rank) and returns their parameters. Throws std::invalid_argument when the model has
  // no experts or their number does not divide by the group's size.
  virtual std::vector<torch::Tensor> split_for_expert_parallel(std::shared_ptr<ExpertParallel> ep) = 0;
};

}  // namespace xpuperf::parallel
