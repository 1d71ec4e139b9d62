// The check of the expert-parallel switch (expert_parallel.h): torch-free, so that `xpuperf check`
// and `xpuperf run` refuse a config that cannot run without loading LibTorch
// (core/training_switches.h).

#include <string>

#include "xpuperf/core/switch_spec.h"
#include "xpuperf/core/training_switches.h"

namespace xpuperf::parallel {
namespace {

void check_expert_parallel(const SwitchCheckInput& in, Diagnostics& diags) {
  const std::int64_t parts = in.get_int("expert_parallel", 1), world = in.world_size;
  const auto at = in.source("expert_parallel");
  if (parts <= 1) return;  // below 1: said by its declaration's value check
  const std::int64_t experts = in.get_int("num_local_experts", 0);
  if (world % parts != 0)
    diags.error(
        at, "'expert_parallel' " + std::to_string(parts) + " does not divide the " + std::to_string(world) + " ranks",
        "groups of expert_parallel ranks share the experts; data parallelism runs over the groups");
  if (experts <= 0)
    diags.error(at, "'expert_parallel' " + std::to_string(parts) + " with no experts (num_local_experts: 0)",
                "set num_local_experts (Mixtral: 8), or expert_parallel: 1");
  else if (experts % parts != 0)
    diags.error(at, "'expert_parallel' " + std::to_string(parts) + " does not divide the model's " +
                        std::to_string(experts) + " experts (num_local_experts)");
  const std::string not_yet = "not yet with expert_parallel (each rank of a group holds its own experts); set ";
  if (in.get_int("tensor_parallel", 1) > 1)
    diags.error(in.source("tensor_parallel"), "tensor_parallel: " + not_yet + "tensor_parallel: 1");
  if (in.get_int("pipeline_parallel", 1) > 1)
    diags.error(in.source("pipeline_parallel"), "pipeline_parallel: " + not_yet + "pipeline_parallel: 1");
  if (in.get_int("zero_stage", 0) > 0) diags.error(in.source("zero_stage"), "zero_stage: " + not_yet + "zero_stage: 0");
  if (in.get_bool("offload_optimizer", false))
    diags.error(in.source("offload_optimizer"), "offload_optimizer: " + not_yet + "offload_optimizer: false");
  if (in.get_int("lora_rank", 0) > 0) diags.error(in.source("lora_rank"), "lora_rank: " + not_yet + "lora_rank: 0");
  if (in.get_bool("cuda_graphs", false))
    diags.error(
        in.source("cuda_graphs"),
        "cuda_graphs: not with expert_parallel (the experts' buffers are sized each step); set cuda_graphs: false");
  if (!in.get_string("save_checkpoint", "").empty())
    diags.error(in.source("save_checkpoint"), "save_checkpoint: " + not_yet + "save_checkpoint: \"\"");
}

const bool expert_parallel_check_registered = register_switch_check("expert_parallel", check_expert_parallel);

const bool expert_parallel_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "expert_parallel";
  s.type = SwitchType::Int;
  s.default_value = "1";
  s.min = 1;
  s.unit = "ranks";
  s.doc = "groups of this many ranks share a mixture of experts' experts, tokens sent to them all-to-all";
  s.sweep_token = "ep";
  s.not_yet_with = {"tensor_parallel",   "pipeline_parallel", "zero_stage",
                    "offload_optimizer", "lora_rank",         "cuda_graphs"};
  s.in_submit_info = true;
  s.in_finished = true;
  return s;
}());

}  // namespace
}  // namespace xpuperf::parallel
