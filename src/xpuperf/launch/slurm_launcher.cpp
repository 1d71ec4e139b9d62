// The slurm launcher: one `srun` a round starts a node agent on each allocated node (inside an
// allocation, or asking for one from the plan's partition). The agents learn their node rank,
// host and master from Slurm's variables and write into the round folder, which Slurm clusters
// share between nodes.

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "xpuperf/launch/launcher.h"

namespace xpuperf {
namespace fs = std::filesystem;

namespace {

class SlurmLauncher : public Launcher {
 public:
  std::string name() const override { return "slurm"; }

  void check(const Plan& plan, const Deployment&, Diagnostics& diags) override {
    ProcessSpec spec;
    spec.argv = {"sinfo", "--noheader", "--format=%P %a %D"};
    if (!plan.slurm_partition.empty()) spec.argv.push_back("--partition=" + plan.slurm_partition);
    const std::string log = (fs::temp_directory_path() / ("xpuperf-sinfo-" + std::to_string(::getpid()))).string();
    spec.log_path = log;
    const Source where = plan.raw.has("launcher") ? plan.raw.at("launcher").source : Source{plan.file, 0};
    try {
      const ExitStatus s = run_process(spec, std::chrono::seconds(20));
      std::ifstream in(log);
      std::string line, first;
      int nodes = -1;
      while (std::getline(in, line)) {
        if (first.empty()) first = line;
        // "<partition>[*] <up|down> <nodes>": the plan's partition, else the default one (*).
        std::istringstream fields(line);
        std::string partition, state;
        int count = 0;
        if (!(fields >> partition >> state >> count)) continue;
        const bool is_default = !partition.empty() && partition.back() == '*';
        if (is_default) partition.pop_back();
        if (plan.slurm_partition.empty() ? is_default : partition == plan.slurm_partition) nodes = count;
      }
      if (!s.ok()) {
        diags.error(where, "Slurm does not answer (sinfo " + s.describe() + "): " + first,
                    "check that slurmctld runs and SLURM_CONF points to its config");
      } else if (nodes < 0) {
        diags.error(where,
                    "Slurm has no " + (plan.slurm_partition.empty() ? std::string("default partition")
                                                                    : "partition '" + plan.slurm_partition + "'"),
                    "set slurm_partition in the plan");
      } else {
        // srun would wait forever for nodes the partition does not have.
        for (const auto& c : plan.cases)
          if (c.key.nnodes > nodes)
            diags.error(c.source, "case " + c.key.str() + " needs " + std::to_string(c.key.nnodes) +
                                      " nodes but the Slurm partition has " + std::to_string(nodes));
      }
    } catch (const ProcessError& e) {
      diags.error(where, std::string("cannot run sinfo: ") + e.what(), "install Slurm's client (slurm-client)");
    }
    fs::remove(log);
  }

  // One srun starts a node agent on each allocated node.
  std::vector<std::string> srun_argv(const Plan& plan, const Deployment& deployment, const RoundSpec& spec) const {
    const PlanCase& c = *spec.plan_case;
    std::vector<std::string> argv = {
        "srun", "--nodes=" + std::to_string(c.key.nnodes), "--ntasks=" + std::to_string(c.key.nnodes),
        "--ntasks-per-node=1", "--kill-on-bad-exit=1", "--job-name=xpuperf-" + c.key.model,
        // Slurm's own limit a minute after ours, in case the agents cannot keep it.
        "--time=" + std::to_string(static_cast<long long>(std::ceil(plan.case_time_limit_s / 60.0)) + 1)};
    if (!plan.slurm_partition.empty()) argv.push_back("--partition=" + plan.slurm_partition);
    // Each agent learns its node rank, addresses and folder (in the round's) from Slurm.
    NodeRequest request = node_request(plan, deployment, spec, 0);
    request.slurm = true;
    request.out_dir = spec.round_dir;
    request.first_device = -1;  // one agent a node: the node's devices are its own
    argv.push_back("--");
    const auto agent = node_agent_argv(deployment.xpuperf, request);
    argv.insert(argv.end(), agent.begin(), agent.end());
    return argv;
  }

  std::vector<std::vector<std::string>> round_commands(const Plan& plan, const Deployment& deployment,
                                                       const RoundSpec& spec) override {
    return {srun_argv(plan, deployment, spec)};
  }

  RoundOutcome run_round(const Plan& plan, const Deployment& deployment, const RoundSpec& spec,
                         const std::atomic<int>& stop) override {
    const int nodes = spec.plan_case->key.nnodes;
    ProcessSpec srun;
    srun.argv = srun_argv(plan, deployment, spec);
    fs::create_directories(spec.round_dir);
    srun.log_path = spec.round_dir + "/srun.log";

    bool interrupted = false;
    try {
      auto process = Process::start(srun);
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::duration<double>(plan.case_time_limit_s + 120);
      while (process->running()) {
        if (stop != 0 || std::chrono::steady_clock::now() > deadline) {
          interrupted = stop != 0;
          process->stop(std::chrono::seconds(30));  // srun passes SIGTERM on to the agents
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      process->wait();
    } catch (const ProcessError& e) {
      RoundOutcome outcome;
      outcome.reason = std::string("cannot run srun: ") + e.what();
      return outcome;
    }

    // The agents' folders: <host>_noderank<i>.
    std::vector<NodeOutcome> outcomes;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(spec.round_dir, ec)) {
      const std::string name = entry.path().filename().string();
      const auto at = name.rfind("_noderank");
      if (!entry.is_directory() || at == std::string::npos) continue;
      NodeOutcome node;
      node.host = name.substr(0, at);
      node.node_rank = std::atoi(name.c_str() + at + 9);
      node.dir = entry.path().string();
      if (!read_node_status(node)) node.reason = "the node agent wrote no status (see " + srun.log_path + ")";
      outcomes.push_back(node);
    }
    std::sort(outcomes.begin(), outcomes.end(),
              [](const NodeOutcome& a, const NodeOutcome& b) { return a.node_rank < b.node_rank; });
    if (static_cast<int>(outcomes.size()) < nodes && !outcomes.empty()) {
      NodeOutcome missing;
      missing.host = "?";
      missing.reason = std::to_string(nodes - static_cast<int>(outcomes.size())) +
                       " node(s) never started an agent (see " + srun.log_path + ")";
      outcomes.push_back(missing);
    }
    RoundOutcome outcome = round_outcome(outcomes, interrupted);
    if (outcomes.empty()) outcome.reason = "srun started no node agent (see " + srun.log_path + ")";
    return outcome;
  }

 protected:
  std::vector<std::string> node_command(const Plan&, const std::string&,
                                        const std::vector<std::string>& agent) override {
    return agent;  // unused: run_round starts all nodes with one srun
  }
};

}  // namespace

std::unique_ptr<Launcher> make_slurm_launcher() {
  return std::make_unique<SlurmLauncher>();
}

}  // namespace xpuperf
