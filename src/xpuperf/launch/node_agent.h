#pragma once
// The node agent (`xpuperf node`): what runs on each host for one round. It writes the merged
// config and the system description, starts the host's ranks with the launcher variables,
// streams each rank's output to rank<k>.out.log, waits with a time limit, stops every rank
// when one fails, and records how each rank ended in node_status.json.

#include <string>
#include <vector>

#include "xpuperf/core/plan.h"

namespace xpuperf {

struct NodeRequest {
  std::string root;      // content folder (cases/, vendors/)
  std::string case_key;  // model:framework:hardware:nnodes:nproc:repeat
  std::string vendor;
  std::string data_dir;
  std::vector<std::string> sets;  // base and inference cases: overrides, key=value
  int node_rank = 0;
  std::string node_addr;  // this host's address as the plan names it (Gloo binds to it)
  std::string master_addr = "127.0.0.1";
  int master_port = 29501;
  std::string out_dir;      // this node's folder of the round
  double time_limit_s = 0;  // 0: none
  std::string visible_devices_env = "CUDA_VISIBLE_DEVICES";
  bool echo = false;  // also print the ranks' output, prefixed
  bool clear_caches = false;
  double monitor_period_s = 1.0;  // CPU and memory into monitor.csv; 0: off
  // Under srun: node rank, host and master from Slurm's variables, and out_dir is the round
  // folder, in which the agent makes its own <host>_noderank<i> folder.
  bool slurm = false;  // drop the page cache before starting the ranks (needs root)
  // Set when several node agents share this host: this node's ranks see devices first_device ..
  // first_device+nproc-1 and its monitors record only those accelerators. -1: the host is ours.
  int first_device = -1;
  // Ranks in a container (container.h): one per node and round, removed when the round ends.
  ContainerSettings container;
};

// Exit codes of the agent, also written to node_status.json.
inline constexpr int kNodeOk = 0;
inline constexpr int kNodeRankFailed = 1;
inline constexpr int kNodeBadInput = 2;
inline constexpr int kNodeTimedOut = 124;
inline constexpr int kNodeInterrupted = 130;

int run_node(const NodeRequest& request);

// What run_node would run, without running anything (`xpuperf run --dry-run`): the container's
// commands and each rank's. Empty, with `problem` set, when the case's config does not load.
std::vector<std::vector<std::string>> node_dry_run(const NodeRequest& request, std::string& problem);

}  // namespace xpuperf
