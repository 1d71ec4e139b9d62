#pragma once
// How the world's ranks divide into tensor-parallel groups, pipeline stages and data-parallel
// ranks, and the model's split over them. Megatron's order: rank = (stage × data ranks + data
// index) × tensor_parallel + place, so a tensor-parallel group is consecutive ranks (one host's
// fast links) and the stages of a pipeline are furthest apart.

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "xpuperf/core/config.h"
#include "xpuperf/parallel/expert_parallel.h"
#include "xpuperf/parallel/pipeline.h"
#include "xpuperf/parallel/tensor_parallel.h"
#include "xpuperf/torchrt/distributed.h"

namespace xpuperf::parallel {

struct RankPlace {
  int stage = 0, data_index = 0, place = 0;
};
RankPlace rank_place(int rank, int tensor_parallel, int data_ranks);
int rank_at(const RankPlace& at, int tensor_parallel, int data_ranks);

struct ParallelGroups {
  std::unique_ptr<torchrt::Distributed> data;  // the data-parallel ranks; null: the world is
  std::shared_ptr<TensorParallel> tp;          // null without tensor parallelism
  std::shared_ptr<PipelineStage> pipeline;     // null without pipeline stages
  std::shared_ptr<ExpertParallel> ep;          // null without expert parallelism
};
// This rank's groups, formed over `world`'s rendezvous; every rank forms its groups in the same
// order (a group's members wait for each other). Expert parallelism (expert_parallel > 1) is built
// for a world of data-parallel ranks only (tensor_parallel and pipeline_parallel 1).
ParallelGroups form_parallel_groups(const torchrt::Distributed& world, int tensor_parallel, int pipeline_parallel,
                                    int expert_parallel = 1);

struct SplitModel {
  std::vector<torch::Tensor> params;              // what this rank trains
  std::vector<torch::Tensor> split;               // tensor-parallel parts (each rank of a group its own)
  std::vector<torch::Tensor> tied_across_stages;  // held by the first and the last stage both
  std::vector<torch::Tensor> experts;             // expert-parallel parts (among params; reduced over their replicas)
};
// Splits `model`, the same on every rank, as `groups` say: into stages, then each stage's layers
// over the tensor-parallel group. ConfigError naming cfg's key when the model cannot be split.
SplitModel split_model(torch::nn::Module& model, const ParallelGroups& groups, const Config& cfg,
                       const std::string& case_name);

}  // namespace xpuperf::parallel
