// The check of a switch whose strategy is gradient_sync.cpp: torch-free, so that `xpuperf check`
// and `xpuperf run` refuse a config that cannot run without loading LibTorch (core/training_switches.h).

#include <string>

#include "xpuperf/core/switch_spec.h"
#include "xpuperf/core/training_switches.h"

namespace xpuperf::train {
namespace {

// `zero_stage` (its values: the declaration below) over the data-parallel ranks only: not yet with a
// model split.
void check_zero_stage(const SwitchCheckInput& in, Diagnostics& diags) {
  const std::int64_t stage = in.get_int("zero_stage", 0);
  if (stage < 0 || stage > 3) return;
  if (stage > 0 && in.get_int("tensor_parallel", 1) > 1)
    diags.error(in.source("zero_stage"), "zero_stage with tensor_parallel is not implemented yet", "use one of them");
  else if (stage > 0 && in.get_int("pipeline_parallel", 1) > 1)
    diags.error(in.source("zero_stage"), "zero_stage with pipeline_parallel is not implemented yet", "use one of them");
}

const bool zero_check_registered = register_switch_check("zero_stage", check_zero_stage);

const bool zero_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "zero_stage";
  s.type = SwitchType::Int;
  s.default_value = "0";
  s.min = 0;
  s.max = 3;
  s.doc =
      "ZeRO over the data-parallel ranks: 1 shards the optimizer state, 2 also the gradients, 3 also the blocks' "
      "parameters";
  s.sweep_token = "zero";
  s.not_yet_with = {"tensor_parallel", "pipeline_parallel"};
  s.in_submit_info = true;
  s.in_finished = true;
  return s;
}());

const bool overlap_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "overlap_grad_reduce";
  s.type = SwitchType::Bool;
  s.default_value = "true";
  s.doc = "start each gradient bucket's all-reduce during backward";
  return s;
}());

}  // namespace
}  // namespace xpuperf::train
