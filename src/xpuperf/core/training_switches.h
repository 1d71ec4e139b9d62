#pragma once
// The training runtime's switches (Rapidformer's acceleration switches and Megatron's model
// parallelism): each composes with data parallelism and with the others, and each checks its own
// settings. A switch's check lives beside the strategy that implements it, in a torch-free file of its
// own (train/step_precision_check.cpp beside train/step_precision.cpp, and gradient_sync_check,
// step_schedule_check, step_graph_check, parallel/model_parallel_check), so that `xpuperf` checks a
// plan without LibTorch; it registers itself here; check_training_switches runs the value ranges
// (train/training_limits_check.cpp), each declared switch's values (switch_spec.h) and every registered check when a
// config is loaded (`xpuperf check`, `train`, `run`, `sweep`), so a combination that cannot work is refused, at the
// line that set it, before anything starts.

#include <cstdint>
#include <functional>
#include <string>

#include "xpuperf/core/config.h"
#include "xpuperf/core/diagnostics.h"
#include "xpuperf/core/model_splits.h"

namespace xpuperf {

// What a switch's check sees: the merged config, the run's ranks, and what the case's model can
// split into (null: the case declared nothing; its ranks check).
struct SwitchCheckInput {
  const Config& cfg;
  int world_size;
  const ModelSplits* splits;

  // A value, or `fallback` when it is absent or of the wrong type (the merge reports a wrong type).
  std::int64_t get_int(const std::string& key, std::int64_t fallback) const;
  double get_number(const std::string& key, double fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  // Where `key` was set (the config's origin when it was not).
  Source source(const std::string& key) const;
  // Ranks that hold a whole copy of the model's split (what register_model_ranks gave: tensor ×
  // pipeline parallel ranks when they divide the world; 1 without it), and the data-parallel ranks
  // over them.
  std::int64_t model_ranks() const;
  std::int64_t data_ranks() const { return world_size % model_ranks() == 0 ? world_size / model_ranks() : world_size; }
};

using SwitchCheck = std::function<void(const SwitchCheckInput&, Diagnostics&)>;

// Called once by a switch's file (a static registrar); `name` orders the checks. Returns true.
bool register_switch_check(const std::string& name, SwitchCheck check);

// The value ranges of the training and model parameters, run before the switches' checks
// (train/training_limits_check.cpp). Returns true.
bool register_limits_check(SwitchCheck check);
// How many ranks hold one copy of the model's split (parallel/model_parallel_check.cpp). Returns true.
bool register_model_ranks(std::function<std::int64_t(const SwitchCheckInput&)> ranks);

// Checks each switch's value and their combinations for a run of `world_size` ranks; each problem
// goes to `diags` at the line that set the switch. `splits`: what the case's model can be split
// into (model_splits.h); null: the model is not checked here.
void check_training_switches(const Config& cfg, int world_size, Diagnostics& diags,
                             const ModelSplits* splits = nullptr);

}  // namespace xpuperf
