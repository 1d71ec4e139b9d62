#pragma once
// The commands' LibTorch half. `xpuperf` links no LibTorch: what needs none (run, check, report,
// data, node, sweep, ...) then starts in milliseconds instead of the 0.7 s LibTorch's libraries take
// to load and register their operators at every start. A process that trains, runs an inference
// case or a LibTorch base case replaces itself (exec: the same process id, arguments and
// environment) with `xpuperf-torch`, built beside it: the same commands, with LibTorch and the
// cases, which sets the entry below (torch_entry.cpp).

#include <ostream>
#include <string>
#include <vector>

#include "xpuperf/core/rank_env.h"
#include "xpuperf/core/torch_requests.h"
#include "xpuperf/core/vendor_spec.h"

namespace xpuperf::cli {

struct TorchEntry {
  int (*train_rank)(const TrainingRankRequest&) = nullptr;
  // Null in a build of the quickstart's cases only (XPUPERF_CASES=quickstart).
  int (*infer)(const InferenceRequest&, std::ostream&, std::ostream&) = nullptr;
  // Makes the vendor this process's (its plug-in loaded): before a base case, whose implementations
  // the plug-in may bring. Throws std::runtime_error with the message for the user.
  void (*activate_vendor)(const VendorSpec&) = nullptr;
  // One rank of `xpuperf vendor check` (base/conformance.h); null in the quickstart's build.
  int (*vendor_check_rank)(const VendorSpec&, const RankEnv&, std::ostream&, std::ostream&) = nullptr;
  // `xpuperf op` (opbench/op_case.h); null in the quickstart's build.
  int (*op)(const OperatorRequest&, std::ostream&, std::ostream&) = nullptr;
};

// The entry of this binary: null in `xpuperf`, set in `xpuperf-torch`.
const TorchEntry* torch_entry();
// Called once, by xpuperf-torch's registrar; returns true.
bool set_torch_entry(const TorchEntry* entry);

// In `xpuperf`: replaces this process with xpuperf-torch running `argv` (argv[0] aside). Returns
// only where there is nothing to hand over to: in xpuperf-torch itself, or in a build without
// LibTorch (the caller then says so). Throws CommandError when xpuperf-torch is there but cannot be run.
void hand_over_to_torch(const std::vector<std::string>& argv);

// Why this binary cannot `what` (train, run inference cases): no xpuperf-torch beside it.
std::string without_torch(const std::string& what);

}  // namespace xpuperf::cli
