#include "xpuperf/parallel/model_parallel.h"

#include <stdexcept>

#include "xpuperf/parallel/parallel_linear.h"

namespace xpuperf::parallel {

RankPlace rank_place(int rank, int tensor_parallel, int data_ranks) {
  return {rank / (tensor_parallel * data_ranks), rank / tensor_parallel % data_ranks, rank % tensor_parallel};
}

int rank_at(const RankPlace& at, int tensor_parallel, int data_ranks) {
  return (at.stage * data_ranks + at.data_index) * tensor_parallel + at.place;
}

ParallelGroups form_parallel_groups(const torchrt::Distributed& world, int t, int p, int e) {
  ParallelGroups groups;
  if (e > 1) {
    if (t > 1 || p > 1)
      throw std::invalid_argument("expert_parallel with tensor_parallel or pipeline_parallel is not built");
    const int rank = world.rank(), size = world.world_size(), group = rank / e, place = rank % e;
    std::vector<int> members, replicas;
    for (int i = 0; i < e; ++i) members.push_back(group * e + i);
    for (int g = 0; g < size / e; ++g) replicas.push_back(g * e + place);
    std::shared_ptr<torchrt::Distributed> ep = world.subgroup("ep" + std::to_string(group), members);
    std::shared_ptr<torchrt::Distributed> same;
    if (replicas.size() > 1) same = world.subgroup("epr" + std::to_string(place), replicas);
    groups.ep = std::make_shared<ExpertParallel>(std::move(ep), std::move(same));
    return groups;
  }
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

// Splits `model` as a `Kind` of model with `split`; what it cannot do becomes a ConfigError at the
// line that set `key` (the model lacks `what`, or `split` throws std::invalid_argument).
template <typename Kind, typename Split>
void split_as(torch::nn::Module& model, const Config& cfg, const std::string& key, const std::string& case_name,
              const std::string& what, Split split) {
  auto* kind = dynamic_cast<Kind*>(&model);
  if (!kind)
    throw ConfigError(cfg.at(key).source.str() + ": " + key + ": the model of " + case_name + " has no " + what +
                      "; set " + key + ": 1");
  try {
    split(*kind);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(cfg.at(key).source.str() + ": " + e.what());
  }
}

}  // namespace

SplitModel split_model(torch::nn::Module& model, const ParallelGroups& groups, const Config& cfg,
                       const std::string& case_name) {
  SplitModel out;
  if (groups.pipeline)
    split_as<PipelineModel>(model, cfg, "pipeline_parallel", case_name, "blocks to split into stages",
                            [&](PipelineModel& m) {
                              m.split_for_pipeline(groups.pipeline);
                              out.tied_across_stages = m.tied_across_stages();
                            });
  if (groups.tp) {
    const bool sequence = cfg.get_bool("sequence_parallel", false);
    split_as<TensorParallelModel>(
        model, cfg, "tensor_parallel", case_name, "layers to split", [&](TensorParallelModel& m) {
          if (sequence && !m.takes_sequence_parallel())
            throw ConfigError(cfg.at("sequence_parallel").source.str() + ": sequence_parallel: the model of " +
                              case_name +
                              " does not split its sequence yet (llama's, gpt2's, cpm's and bert's do); set "
                              "sequence_parallel: false");
          groups.tp->set_sequence_parallel(sequence);
          m.split_for_tensor_parallel(groups.tp);
        });
    out.split = split_parameters_of(model);
  }
  if (groups.ep)
    split_as<ExpertParallelModel>(
        model, cfg, "expert_parallel", case_name, "experts to split",
        [&](ExpertParallelModel& m) { out.experts = m.split_for_expert_parallel(groups.ep); });
  // What this rank trains: a stage's parameters, and never a frozen one (LoRA's base model). A
  // trained parameter a step does not use takes part in the all-reduce as zeros.
  out.params = trained(model);
  return out;
}

}  // namespace xpuperf::parallel
