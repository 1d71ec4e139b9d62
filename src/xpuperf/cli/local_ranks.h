#pragma once
// `xpuperf train --nproc N` and `xpuperf base --nproc N` without a launcher: N copies of this
// program on this host, with the launcher variables set.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "xpuperf/core/process.h"

namespace xpuperf::cli {

// Starts `nproc` copies of this program with `argv` (argv[0] is replaced), RANK etc. set and the
// rendezvous on 127.0.0.1:`master_port` (0: a free port); streams their output with a
// "[rank k] " prefix; when one fails, the others get kRankSettle to end by themselves (the
// lead rank may be about to report the same error, or its results) and are then stopped. Returns the exit code.
int spawn_local_ranks(int nproc, int master_port, const std::vector<std::string>& argv);

// Starts the same `nproc` ranks, each one's output to `log_path(rank)`, and returns them running
// (wait_all waits for them): for a command that reads the ranks' output itself (vendor check).
std::vector<std::unique_ptr<Process>> start_local_ranks(int nproc, int master_port,
                                                        const std::vector<std::string>& argv,
                                                        const std::function<std::string(int)>& log_path);

}  // namespace xpuperf::cli
