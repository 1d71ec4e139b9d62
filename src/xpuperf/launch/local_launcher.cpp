// The local launcher: the node agent as a child process on this machine.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "xpuperf/core/process.h"
#include "xpuperf/launch/launcher.h"
#include "xpuperf/launch/node_agent.h"

namespace xpuperf {
namespace fs = std::filesystem;

std::string node_dir_name(const std::string& host, int node_rank) {
  return host + "_noderank" + std::to_string(node_rank);
}

namespace {

// Reads the agent's node_status.json into `node`; false when it wrote none.
bool read_node_status(NodeOutcome& node) {
  std::ifstream in(node.dir + "/node_status.json");
  if (!in) return false;
  const auto status = nlohmann::json::parse(in, nullptr, false);
  if (status.is_discarded() || !status.is_object()) return false;
  node.exit_code = status.value("exit_code", -1);
  node.reason = status.value("reason", "");
  return true;
}

class LocalLauncher : public Launcher {
 public:
  std::string name() const override { return "local"; }

  RoundOutcome run_round(const Plan& plan, const RoundSpec& spec, const std::atomic<int>& stop) override {
    const PlanCase& c = *spec.plan_case;
    NodeOutcome node;
    node.host = spec.hosts.at(0);
    node.node_rank = 0;
    node.dir = spec.round_dir + "/" + node_dir_name(node.host, 0);
    fs::create_directories(node.dir);
    ProcessSpec agent;
    agent.argv = {spec.xpuperf,
                  "--root",
                  spec.root,
                  "node",
                  "--case-key",
                  c.key.str(),
                  "--vendor",
                  plan.vendor,
                  "--data-dir",
                  c.data_dir,
                  "--node-rank",
                  "0",
                  "--master-addr",
                  "127.0.0.1",
                  "--master-port",
                  std::to_string(plan.master_port),
                  "--out",
                  node.dir,
                  "--time-limit",
                  std::to_string(plan.case_time_limit_s),
                  "--visible-devices-env",
                  plan.visible_devices_env};
    agent.log_path = node.dir + "/node_agent.log";
    RoundOutcome outcome;
    std::unique_ptr<Process> process;
    try {
      process = Process::start(agent);
    } catch (const ProcessError& e) {
      outcome.reason = std::string("cannot start the node agent: ") + e.what();
      outcome.nodes.push_back(node);
      return outcome;
    }
    // The agent keeps the time limit; this is the backstop should the agent itself hang.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(plan.case_time_limit_s + 60);
    bool interrupted = false;
    while (process->running()) {
      if (stop != 0 || std::chrono::steady_clock::now() > deadline) {
        interrupted = stop != 0;
        process->stop(std::chrono::seconds(15));  // TERM: the agent stops its ranks and reports
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const ExitStatus agent_status = process->wait();
    if (!read_node_status(node)) {
      node.reason = "the node agent " + agent_status.describe() + " without a status (see node_agent.log)";
    }
    outcome.nodes.push_back(node);
    switch (node.exit_code) {
      case kNodeOk:
        outcome.status = "ok";
        break;
      case kNodeTimedOut:
        outcome.status = "timed_out";
        break;
      case kNodeInterrupted:
        outcome.status = interrupted ? "interrupted" : "failed";
        break;
      default:
        outcome.status = interrupted ? "interrupted" : "failed";
    }
    outcome.reason = node.reason;
    return outcome;
  }
};

}  // namespace

std::unique_ptr<Launcher> make_launcher(const Plan& plan) {
  if (plan.launcher == "local") return std::make_unique<LocalLauncher>();
  throw std::runtime_error("the " + plan.launcher +
                           " launcher is not part of this version of xpuperf yet; use launcher: local (one host)");
}

}  // namespace xpuperf
