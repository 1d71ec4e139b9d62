// The check of a switch whose strategy is gradient_sync.cpp: torch-free, so that `xpuperf check`
// and `xpuperf run` refuse a config that cannot run without loading LibTorch (core/training_switches.h).

#include <string>

#include "xpuperf/core/training_switches.h"

namespace xpuperf::train {
namespace {

// `zero_stage`: 0 to 3, over the data-parallel ranks only (not yet with a model split).
void check_zero_stage(const SwitchCheckInput& in, Diagnostics& diags) {
  const std::int64_t stage = in.get_int("zero_stage", 0);
  if (stage < 0 || stage > 3)
    diags.error(in.source("zero_stage"), "'zero_stage' must be 0, 1, 2 or 3, got " + std::to_string(stage),
                "0: plain data parallelism; 1: optimizer state sharded; 2: and gradients; 3: and the blocks' "
                "parameters");
  else if (stage > 0 && in.get_int("tensor_parallel", 1) > 1)
    diags.error(in.source("zero_stage"), "zero_stage with tensor_parallel is not implemented yet", "use one of them");
  else if (stage > 0 && in.get_int("pipeline_parallel", 1) > 1)
    diags.error(in.source("zero_stage"), "zero_stage with pipeline_parallel is not implemented yet", "use one of them");
}

const bool zero_check_registered = register_switch_check("zero_stage", check_zero_stage);

}  // namespace
}  // namespace xpuperf::train
