#pragma once
// The in-process training entry (`xpuperf train`), callable from torch-free code: the CLI
// includes this header without including LibTorch.

#include <string>
#include <vector>

#include "xpuperf/core/config.h"
#include "xpuperf/core/rank_env.h"
#include "xpuperf/core/vendor_spec.h"

namespace xpuperf::train {

struct RankRequest {
  std::string model;
  std::string framework;
  std::string vendor;
  Config config;  // merged (training_config.h)
  RankEnv env;
  VendorSpec vendor_spec;  // vendors/<vendor>/vendor.yaml: its plug-in is loaded before the first tensor
};

// Runs one rank of a training case and prints its PerfLog to stdout. Returns the exit code:
// 0 trained (converged or not: FINISHED says), 1 a user-caused error (printed), 3 the case is not
// built into this binary.
int run_rank(const RankRequest& request);

// "model:framework" of every case built into this binary.
std::vector<std::string> built_training_cases();

}  // namespace xpuperf::train
