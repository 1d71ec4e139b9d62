#include "xpuperf/parallel/model_parallel.h"

#include <stdexcept>

#include "xpuperf/core/training_switches.h"
#include "xpuperf/parallel/parallel_linear.h"

namespace xpuperf::parallel {

namespace {

// Why the case's model cannot be split `parts` ways by `key` (tensor_parallel or pipeline_parallel);
// "" when it can, or when the case declared nothing (its ranks check then, in split_model).
std::string model_refuses(const SwitchCheckInput& in, const std::string& key, std::int64_t parts) {
  if (!in.splits || parts <= 1) return "";
  const bool tensor = key == "tensor_parallel";
  if (!(tensor ? in.splits->tensor_parallel : in.splits->pipeline_parallel))
    return "'" + key + "' " + std::to_string(parts) + ": the model of this case has no " +
           (tensor ? "layers to split" : "blocks to split into stages");
  for (const auto& size : tensor ? in.splits->tensor_divides : in.splits->pipeline_divides) {
    const std::int64_t value = in.get_int(size.key, 0);
    if (value > 0 && value % parts != 0)
      return "'" + key + "' " + std::to_string(parts) + " does not divide the model's " + std::to_string(value) + " " +
             size.what + " (" + size.key + ")";
  }
  return "";
}

// `tensor_parallel` and `pipeline_parallel`: the rank layout fits the world and the model.
void check_model_parallel(const SwitchCheckInput& in, Diagnostics& diags) {
  const bool saves = !in.get_string("save_checkpoint", "").empty();
  const std::int64_t tensor = in.get_int("tensor_parallel", 1), world = in.world_size;
  if (tensor < 1)
    diags.error(in.source("tensor_parallel"), "'tensor_parallel' must be 1 or more, got " + std::to_string(tensor),
                "1: no tensor parallelism; N: groups of N ranks split each layer");
  else if (world % tensor != 0)
    diags.error(
        in.source("tensor_parallel"),
        "'tensor_parallel' " + std::to_string(tensor) + " does not divide the " + std::to_string(world) + " ranks",
        "groups of tensor_parallel ranks split each layer; data parallelism runs over the groups");
  else if (const std::string why = model_refuses(in, "tensor_parallel", tensor); !why.empty())
    diags.error(in.source("tensor_parallel"), why, "set tensor_parallel to a size the model divides into, or 1");
  else if (tensor > 1 && saves)
    diags.error(in.source("save_checkpoint"),
                "save_checkpoint with tensor_parallel is not implemented yet (each rank holds a part)");
  const std::int64_t pipeline = in.get_int("pipeline_parallel", 1);
  const bool tensor_fits = tensor >= 1 && world % tensor == 0;
  if (pipeline < 1)
    diags.error(in.source("pipeline_parallel"),
                "'pipeline_parallel' must be 1 or more, got " + std::to_string(pipeline),
                "1: no pipeline; N: N stages of the model's blocks");
  else if (tensor_fits && world % in.model_ranks() != 0)
    diags.error(in.source("pipeline_parallel"),
                "'pipeline_parallel' " + std::to_string(pipeline) + " × tensor_parallel " + std::to_string(tensor) +
                    " does not divide the " + std::to_string(world) + " ranks",
                "each pipeline has pipeline_parallel stages of tensor_parallel ranks; data parallelism runs over "
                "the pipelines");
  else if (const std::string why = model_refuses(in, "pipeline_parallel", pipeline); !why.empty())
    diags.error(in.source("pipeline_parallel"), why,
                "set pipeline_parallel to a number of stages the model's blocks divide into, or 1");
  else if (pipeline > 1 && saves)
    diags.error(in.source("save_checkpoint"),
                "save_checkpoint with pipeline_parallel is not implemented yet (each stage holds its blocks)");
}

const bool model_parallel_check_registered = register_switch_check("model_parallel", check_model_parallel);

}  // namespace

RankPlace rank_place(int rank, int tensor_parallel, int data_ranks) {
  return {rank / (tensor_parallel * data_ranks), rank / tensor_parallel % data_ranks, rank % tensor_parallel};
}

int rank_at(const RankPlace& at, int tensor_parallel, int data_ranks) {
  return (at.stage * data_ranks + at.data_index) * tensor_parallel + at.place;
}

ParallelGroups form_parallel_groups(const torchrt::Distributed& world, int t, int p) {
  ParallelGroups groups;
  if (t <= 1 && p <= 1) return groups;
  const int data_ranks = world.world_size() / (t * p);
  const RankPlace me = rank_place(world.rank(), t, data_ranks);
  std::vector<int> tp_ranks, dp_ranks, pp_ranks;
  for (int i = 0; i < t; ++i) tp_ranks.push_back(rank_at({me.stage, me.data_index, i}, t, data_ranks));
  for (int d = 0; d < data_ranks; ++d) dp_ranks.push_back(rank_at({me.stage, d, me.place}, t, data_ranks));
  for (int s = 0; s < p; ++s) pp_ranks.push_back(rank_at({s, me.data_index, me.place}, t, data_ranks));
  if (t > 1)
    groups.tp = std::make_shared<TensorParallel>(world.subgroup("tp" + std::to_string(world.rank() / t), tp_ranks));
  groups.data = world.subgroup("dp" + std::to_string(me.stage) + "." + std::to_string(me.place), dp_ranks);
  if (p > 1) {
    const std::string at = std::to_string(me.data_index) + "." + std::to_string(me.place);
    std::shared_ptr<torchrt::Distributed> stages = world.subgroup("pp" + at, pp_ranks), ends;
    if (me.stage == 0 || me.stage == p - 1) ends = world.subgroup("ends" + at, {pp_ranks.front(), pp_ranks.back()});
    groups.pipeline = std::make_shared<PipelineStage>(std::move(stages), std::move(ends));
  }
  return groups;
}

namespace {

std::vector<torch::Tensor> trained(torch::nn::Module& model) {
  std::vector<torch::Tensor> params;
  for (const auto& p : model.parameters())
    if (p.requires_grad()) params.push_back(p);
  return params;
}

}  // namespace

SplitModel split_model(torch::nn::Module& model, const ParallelGroups& groups, const Config& cfg,
                       const std::string& case_name) {
  SplitModel out;
  if (groups.pipeline) {
    auto* stageable = dynamic_cast<PipelineModel*>(&model);
    if (!stageable)
      throw ConfigError(cfg.at("pipeline_parallel").source.str() + ": pipeline_parallel: the model of " + case_name +
                        " has no blocks to split into stages; set pipeline_parallel: 1");
    try {
      stageable->split_for_pipeline(groups.pipeline);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(cfg.at("pipeline_parallel").source.str() + ": " + e.what());
    }
    out.tied_across_stages = stageable->tied_across_stages();
  }
  if (groups.tp) {
    auto* splittable = dynamic_cast<TensorParallelModel*>(&model);
    if (!splittable)
      throw ConfigError(cfg.at("tensor_parallel").source.str() + ": tensor_parallel: the model of " + case_name +
                        " has no layers to split; set tensor_parallel: 1");
    try {
      splittable->split_for_tensor_parallel(groups.tp);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(cfg.at("tensor_parallel").source.str() + ": " + e.what());
    }
    out.split = split_parameters_of(model);
  }
  // A stage trains what it kept; without stages every parameter takes part (frozen ones as zeros).
  out.params = groups.pipeline ? trained(model) : model.parameters();
  return out;
}

}  // namespace xpuperf::parallel
