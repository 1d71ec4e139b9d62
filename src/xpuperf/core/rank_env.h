#pragma once
// The variables a launcher sets for each rank (torchrun's names): RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR, MASTER_PORT.

#include <map>
#include <optional>
#include <string>

#include "xpuperf/core/diagnostics.h"

namespace xpuperf {

struct RankEnv {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29501;

  // The variables for a child process, as a launcher sets them.
  std::map<std::string, std::string> to_env() const;
};

// True when a launcher set RANK/WORLD_SIZE for this process.
bool launched_as_rank();

// Reads the variables, checking that they are integers in range and agree with each other;
// problems go to `diags` (naming the variable). Unset variables keep the defaults above.
std::optional<RankEnv> read_rank_env(Diagnostics& diags);

}  // namespace xpuperf
