#pragma once
// The training loop every case shares: epochs and steps, evaluation, convergence, stop
// conditions, data parallelism, mixed precision, checkpoints and the PerfLog events.

#include <chrono>
#include <ostream>
#include <stdexcept>
#include <string>

#include "xpuperf/core/config.h"
#include "xpuperf/core/perflog.h"
#include "xpuperf/core/rank_env.h"
#include "xpuperf/train/training_case.h"

namespace xpuperf::train {

struct RunInfo {
  std::string case_name;  // "lenet5:libtorch"
  std::string vendor;
  RankEnv env;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();  // for e2e_time
};

// Why training stopped.
enum class StopReason { TargetReached, MaxEpochs, MaxSteps, MaxSamples, TimeBudget };
const char* stop_reason_name(StopReason reason);

struct TrainingOutcome {
  FinishedInfo finished;
  StopReason reason = StopReason::MaxEpochs;
  std::map<std::string, double> final_metrics;
};

// A run that cannot give a result: its loss or an evaluation became infinite or not a number.
// It is a failed run, not one that did not converge; the message names the step.
class RunFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Runs the case to the end. Events go to `out` (rank 0 writes the training events; every rank
// writes INIT_START/INIT_END). Throws ConfigError for bad parameters, data::DataError for bad
// data, DistributedError when ranks cannot meet, RunFailed when the loss or a metric is not finite.
TrainingOutcome run_training(TrainingCase& training_case, const Config& config, const RunInfo& info, std::ostream& out);

}  // namespace xpuperf::train
