// The check of a switch whose strategy is step_schedule.cpp: torch-free, so that `xpuperf check`
// and `xpuperf run` refuse a config that cannot run without loading LibTorch (core/training_switches.h).

#include <string>

#include "xpuperf/core/switch_spec.h"
#include "xpuperf/core/training_switches.h"

namespace xpuperf::train {
namespace {

// `global_batch_size`: whole micro-batches on every data-parallel rank (the pipelines, not the ranks).
void check_accumulation(const SwitchCheckInput& in, Diagnostics& diags) {
  const std::int64_t micro = in.get_int("train_batch_size", 1), global = in.get_int("global_batch_size", 0);
  const std::int64_t data_ranks = in.data_ranks();
  if (global > 0 && micro > 0 && global % (micro * data_ranks) != 0)  // a negative one: check_training_limits
    diags.error(in.source("global_batch_size"),
                "'global_batch_size' " + std::to_string(global) +
                    " is not a multiple of train_batch_size × data-parallel ranks = " + std::to_string(micro) + " × " +
                    std::to_string(data_ranks),
                "the micro-batches a step accumulates are global_batch_size / (train_batch_size × ranks); 0 "
                "accumulates none");
}

const bool accumulation_check_registered = register_switch_check("global_batch_size", check_accumulation);

const bool accumulation_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "global_batch_size";
  s.type = SwitchType::Int;
  s.default_value = "0";
  s.min = 0;
  s.unit = "samples";
  s.doc =
      "samples a step over all ranks; more than train_batch_size × data-parallel ranks accumulates micro-batches (0: "
      "none)";
  s.on_value = "64";
  return s;
}());

}  // namespace
}  // namespace xpuperf::train
