#pragma once
// Starts one round of a case on its nodes and waits for it: the node agents on this machine
// (local), over SSH, or under Slurm. One interface, so the controller does not care which.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "xpuperf/core/plan.h"

namespace xpuperf {

struct RoundSpec {
  const PlanCase* plan_case = nullptr;
  int round = 1;
  std::string round_dir;           // <run>/<case dir>/round<N>
  std::vector<std::string> hosts;  // one per node, master first
  std::string root;                // content folder, as the nodes see it
  std::string xpuperf;             // the xpuperf binary, as the nodes see it
};

struct NodeOutcome {
  std::string host;
  int node_rank = 0;
  int exit_code = -1;  // the agent's (node_agent.h), or -1 when it did not report
  std::string reason;
  std::string dir;  // the node's folder in the round
};

struct RoundOutcome {
  std::string status = "failed";  // ok, failed, timed_out, interrupted
  std::string reason;
  std::vector<NodeOutcome> nodes;
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual std::string name() const = 0;
  // Runs the round to its end. `stop` (a signal number) set by the caller means: stop every
  // node now, then return.
  virtual RoundOutcome run_round(const Plan& plan, const RoundSpec& spec, const std::atomic<int>& stop) = 0;
};

// The plan's launcher; throws std::runtime_error for a launcher this build cannot start.
std::unique_ptr<Launcher> make_launcher(const Plan& plan);

// "<host>_noderank<i>"
std::string node_dir_name(const std::string& host, int node_rank);

}  // namespace xpuperf
