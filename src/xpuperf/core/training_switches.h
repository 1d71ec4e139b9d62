#pragma once
// The training runtime's acceleration switches (Rapidformer's): `precision`, `global_batch_size`
// (gradient accumulation), `activation_checkpointing`, `zero_stage`, `fused_optimizer`,
// `cuda_graphs`. Each composes with data parallelism and with the others; the combinations that
// cannot work are refused here, when a config is loaded (`xpuperf check`, `train`, `sweep`),
// before anything starts.

#include <string>

#include "xpuperf/core/config.h"
#include "xpuperf/core/diagnostics.h"
#include "xpuperf/core/model_splits.h"

namespace xpuperf {

// Why cuda_graphs cannot run with the rest of this config on `world_size` ranks; "" when it can.
std::string cuda_graphs_conflict(const Config& cfg, int world_size);

// Checks each switch's value and their combinations for a run of `world_size` ranks; each problem
// goes to `diags` at the line that set the switch. `splits`: what the case's model can be split
// into (model_splits.h); null: the model is not checked here.
void check_training_switches(const Config& cfg, int world_size, Diagnostics& diags,
                             const ModelSplits* splits = nullptr);

}  // namespace xpuperf
