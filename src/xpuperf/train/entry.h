#pragma once
// The in-process training entry (`xpuperf train`): what xpuperf-torch runs for the CLI
// (cli/torch_entry.h).

#include <string>
#include <vector>

#include "xpuperf/core/torch_requests.h"

namespace xpuperf::train {

// Runs one rank of a training case and prints its PerfLog to stdout. Returns the exit code:
// 0 trained (converged or not: FINISHED says), 1 a user-caused error (printed), 3 the case is not
// built into this binary.
int run_rank(const TrainingRankRequest& request);

// "model:framework" of every case built into this binary.
std::vector<std::string> built_training_cases();

}  // namespace xpuperf::train
