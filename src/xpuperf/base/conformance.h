#pragma once
// `xpuperf vendor check`'s checks that run on the vendor's device, in each rank: device memory,
// copies, streams and events; xpuperf's operators with the device's kernels against their
// composite form on the CPU, values and gradients, per dtype; every collective against the sums
// it must give. Each check is one row (a line "XPUPERF_CHECK {json}" on `out`), its error beside
// its tolerance. The command (cli/cmd_vendor.cpp) gathers the ranks' rows and adds the LeNet-5
// curve against the CPU's.

#include <ostream>

#include "xpuperf/core/rank_env.h"
#include "xpuperf/core/vendor_spec.h"

namespace xpuperf::base {

// Runs the checks of this rank (its plug-in loaded first). Returns 0 when they ran (passed or not:
// the rows say), 1 when they could not start (printed).
int run_conformance_rank(const VendorSpec& vendor, const RankEnv& env, std::ostream& out, std::ostream& err);

}  // namespace xpuperf::base
