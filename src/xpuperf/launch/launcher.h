#pragma once
// Starts one round of a case on its nodes and waits for it: node agents on this machine
// (local) or over SSH. One interface, so the controller does not care which.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "xpuperf/core/diagnostics.h"
#include "xpuperf/core/plan.h"
#include "xpuperf/core/process.h"
#include "xpuperf/launch/node_agent.h"

namespace xpuperf {

struct RoundSpec {
  const PlanCase* plan_case = nullptr;
  int round = 1;
  std::string round_dir;                 // absolute: <run>/<case dir>/round<N>, the same path on every node
  std::vector<std::string> hosts;        // one per node, master first
  int master_port = kDefaultMasterPort;  // the ranks' rendezvous port on the first host
};

struct NodeOutcome {
  std::string host;
  int node_rank = 0;
  int exit_code = -1;  // the agent's (node_agent.h), or -1 when it did not report
  std::string reason;
  std::string dir;                // the node's folder in the round, on this machine
  double ranks_started_unix = 0;  // when the agent had started its ranks
  double ranks_ended_unix = 0;    // when the last of them had ended
  std::string clear_caches;       // what clear_caches did, when asked
};

struct RoundOutcome {
  std::string status = "failed";  // ok, failed, timed_out, interrupted
  std::string reason;
  std::vector<NodeOutcome> nodes;
};

// Where xpuperf and its content folder are on the nodes.
struct Deployment {
  std::string xpuperf;  // the binary
  std::string root;     // the folder holding cases/ and vendors/
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual std::string name() const = 0;
  // Step 1: can every host be reached and does it have xpuperf? Problems go to `diags`.
  virtual void check(const Plan& plan, const Deployment& deployment, Diagnostics& diags) = 0;
  // Runs the round to its end. `stop` (a signal number) set by the caller means: stop every
  // node now, then return. When one node fails, the others are stopped.
  virtual RoundOutcome run_round(const Plan& plan, const Deployment& deployment, const RoundSpec& spec,
                                 const std::atomic<int>& stop);
  // The commands run_round would start (one per node, or one for all), for `xpuperf run --dry-run`.
  virtual std::vector<std::vector<std::string>> round_commands(const Plan& plan, const Deployment& deployment,
                                                               const RoundSpec& spec);

 protected:
  // The command that runs `agent` (an argument vector) on `host`.
  virtual std::vector<std::string> node_command(const Plan& plan, const std::string& host,
                                                const std::vector<std::string>& agent) = 0;
  // Asks the agent on `host` to stop its ranks (before its local process is stopped).
  virtual void stop_node(const Plan&, const std::string& /*host*/, const std::string& /*node_dir*/) {}
  // Brings the node's folder to this machine when it is not here already.
  virtual void collect(const Plan&, const std::string& /*host*/, const std::string& /*node_dir*/,
                       const std::string& /*round_dir*/) {}
};

// Reads a node agent's node_status.json (in node.dir) into `node`; false when there is none.
bool read_node_status(NodeOutcome& node);
// The round's status and reason from its nodes: the first node that went wrong on its own,
// else one that was stopped.
RoundOutcome round_outcome(std::vector<NodeOutcome> nodes, bool interrupted);

// What the node agent of the round's node `i` is asked to do (local and ssh launchers; its folder
// is <round>/<host>_noderank<i>): what its command line carries and what --dry-run describes.
NodeRequest node_request(const Plan& plan, const Deployment& deployment, const RoundSpec& spec, std::size_t i);
// `xpuperf node` with `request` on its command line (with `slurm`, node rank, addresses and
// node folder come from Slurm instead).
std::vector<std::string> node_agent_argv(const std::string& xpuperf, const NodeRequest& request);

// The plan's launcher; throws std::runtime_error for a launcher this build cannot start.
std::unique_ptr<Launcher> make_launcher(const Plan& plan);

// "<host>_noderank<i>"
std::string node_dir_name(const std::string& host, int node_rank);

}  // namespace xpuperf
