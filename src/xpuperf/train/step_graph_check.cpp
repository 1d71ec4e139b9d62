// The check of a switch whose strategy is step_graph.cpp: torch-free, so that `xpuperf check`
// and `xpuperf run` refuse a config that cannot run without loading LibTorch (core/training_switches.h).

#include <string>

#include "xpuperf/core/switch_spec.h"
#include "xpuperf/core/training_switches.h"

namespace xpuperf::train {
namespace {

// Why cuda_graphs cannot run with the rest of the config; "" when it can.
std::string cuda_graphs_conflict(const SwitchCheckInput& in) {
  const std::int64_t micro = in.get_int("train_batch_size", 1), global = in.get_int("global_batch_size", 0);
  if (in.world_size > 1)
    return "not yet with data parallelism (the gradient all-reduce is outside the graph); run one rank or set "
           "cuda_graphs: false";
  if (global > 0 && global != micro * in.world_size)
    return "not with gradient accumulation (global_batch_size " + std::to_string(global) +
           " takes several micro-batches a step, and each replay would overwrite the gradients of the last); set "
           "global_batch_size: 0 or cuda_graphs: false";
  if (in.get_bool("activation_checkpointing", false))
    return "not with activation_checkpointing (its recomputation runs inside backward, which the graph cannot "
           "replay with the random state of each step); set one of them false";
  if (in.get_int("zero_stage", 0) > 0)
    return "not with zero_stage (its collectives run from gradient hooks); set zero_stage: 0";
  return "";
}

void check_cuda_graphs(const SwitchCheckInput& in, Diagnostics& diags) {
  if (!in.get_bool("cuda_graphs", false)) return;
  if (const std::string why = cuda_graphs_conflict(in); !why.empty())
    diags.error(in.source("cuda_graphs"), "cuda_graphs: " + why);
}

const bool cuda_graphs_check_registered = register_switch_check("cuda_graphs", check_cuda_graphs);

const bool cuda_graphs_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "cuda_graphs";
  s.type = SwitchType::Bool;
  s.default_value = "false";
  s.doc =
      "forward and backward captured once as a device graph and replayed (one rank, static shapes; any vendor's device "
      "graphs)";
  s.sweep_token = "graphs";
  s.not_yet_with = {"global_batch_size", "activation_checkpointing", "zero_stage",
                    "tensor_parallel",   "pipeline_parallel",        "expert_parallel"};
  s.in_submit_info = true;
  return s;
}());

}  // namespace
}  // namespace xpuperf::train
