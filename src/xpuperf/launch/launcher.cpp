#include "xpuperf/launch/launcher.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "xpuperf/core/files.h"
#include "xpuperf/launch/node_agent.h"

namespace xpuperf {
namespace fs = std::filesystem;

std::unique_ptr<Launcher> make_ssh_launcher();
std::unique_ptr<Launcher> make_slurm_launcher();

std::string node_dir_name(const std::string& host, int node_rank) {
  return host + "_noderank" + std::to_string(node_rank);
}

bool read_node_status(NodeOutcome& node) {
  const auto read = read_json_file(node.dir + "/node_status.json");
  if (!read || !read->is_object()) return false;
  const nlohmann::json& status = *read;
  node.exit_code = status.value("exit_code", -1);
  node.reason = status.value("reason", "");
  node.ranks_started_unix = status.value("ranks_started_unix", 0.0);
  node.ranks_ended_unix = status.value("ranks_ended_unix", 0.0);
  node.clear_caches = status.value("clear_caches", "");
  return true;
}

RoundOutcome round_outcome(std::vector<NodeOutcome> nodes, bool interrupted) {
  RoundOutcome outcome;
  outcome.status = "ok";
  for (const auto& node : nodes) {
    if (node.exit_code == kNodeOk) continue;
    const bool stopped_by_us = node.exit_code == kNodeInterrupted;
    if (outcome.status == "ok" || (!stopped_by_us && outcome.status == "interrupted")) {
      outcome.status = node.exit_code == kNodeTimedOut ? "timed_out"
                       : stopped_by_us && interrupted  ? "interrupted"
                                                       : "failed";
      outcome.reason = (nodes.size() > 1 ? node.host + ": " : "") + node.reason;
    }
  }
  if (nodes.empty()) {
    outcome.status = interrupted ? "interrupted" : "failed";
    outcome.reason = "no node reported";
  }
  if (outcome.status == "ok") outcome.reason = "all ranks exited with code 0";
  outcome.nodes = std::move(nodes);
  return outcome;
}

namespace {

std::string master_address(const std::string& host) {
  return host == "localhost" ? "127.0.0.1" : host;
}

// The node agent on this machine.
class LocalLauncher : public Launcher {
 public:
  std::string name() const override { return "local"; }
  void check(const Plan&, const Deployment&, Diagnostics&) override {}

 protected:
  std::vector<std::string> node_command(const Plan&, const std::string&,
                                        const std::vector<std::string>& agent) override {
    return agent;
  }
};

}  // namespace

namespace {

// Node agents on this same machine (several loopback hosts) take the next devices: node `i`'s
// first device, or -1 when its host is not shared.
int first_device_of(const RoundSpec& spec, std::size_t i) {
  const auto local = std::count_if(spec.hosts.begin(), spec.hosts.end(), is_local_host);
  if (!is_local_host(spec.hosts[i]) || local < 2) return -1;
  const auto before = std::count_if(spec.hosts.begin(), spec.hosts.begin() + static_cast<std::ptrdiff_t>(i),
                                    [](const std::string& h) { return is_local_host(h); });
  return static_cast<int>(before) * spec.plan_case->key.nproc;
}

}  // namespace

NodeRequest node_request(const Plan& plan, const Deployment& deployment, const RoundSpec& spec, std::size_t i) {
  const PlanCase& c = *spec.plan_case;
  NodeRequest r;
  r.root = deployment.root;
  r.case_key = c.key.str();
  r.vendor = plan.vendor;
  r.data_dir = c.data_dir;
  r.sets = c.sets;
  r.node_rank = static_cast<int>(i);
  r.node_addr = master_address(spec.hosts[i]);
  r.master_addr = master_address(spec.hosts[0]);
  r.master_port = spec.master_port;
  r.out_dir = spec.round_dir + "/" + node_dir_name(spec.hosts[i], static_cast<int>(i));
  r.time_limit_s = plan.case_time_limit_s;
  r.visible_devices_env = plan.visible_devices_env;
  r.clear_caches = plan.clear_caches;
  r.monitor_period_s = plan.monitor_period_s;
  r.first_device = first_device_of(spec, i);
  r.container = plan.container;
  return r;
}

std::vector<std::string> node_agent_argv(const std::string& xpuperf, const NodeRequest& r) {
  std::vector<std::string> argv = {xpuperf, "--root", r.root, "node"};
  if (r.slurm) argv.push_back("--slurm");
  argv.insert(argv.end(), {"--case-key", r.case_key, "--vendor", r.vendor, "--data-dir", r.data_dir});
  if (!r.slurm)
    argv.insert(argv.end(), {"--node-rank", std::to_string(r.node_rank), "--node-addr", r.node_addr, "--master-addr",
                             r.master_addr});
  argv.insert(argv.end(), {"--master-port", std::to_string(r.master_port), "--out", r.out_dir, "--time-limit",
                           std::to_string(r.time_limit_s), "--visible-devices-env", r.visible_devices_env,
                           "--monitor-period", std::to_string(r.monitor_period_s)});
  if (r.clear_caches) argv.push_back("--clear-caches");
  for (const auto& set : r.sets) argv.insert(argv.end(), {"--set", set});
  if (r.first_device >= 0) argv.insert(argv.end(), {"--first-device", std::to_string(r.first_device)});
  const ContainerSettings& k = r.container;
  if (!k.enabled()) return argv;
  argv.insert(argv.end(), {"--container-engine", k.engine});
  if (!k.image.empty()) argv.insert(argv.end(), {"--container-image", k.image});
  if (!k.build) argv.push_back("--no-container-build");
  // name=value: the values may start with '-' (run options like --gpus).
  for (const auto& o : k.run_options) argv.push_back("--container-run-option=" + o);
  for (const auto& m : k.mounts) argv.push_back("--container-mount=" + m);
  for (const auto& [name, value] : k.env) argv.push_back("--container-env=" + name + "=" + value);
  if (k.privileged) argv.push_back("--container-privileged");
  return argv;
}

std::vector<std::vector<std::string>> Launcher::round_commands(const Plan& plan, const Deployment& deployment,
                                                               const RoundSpec& spec) {
  std::vector<std::vector<std::string>> commands;
  for (std::size_t i = 0; i < spec.hosts.size(); ++i)
    commands.push_back(node_command(plan, spec.hosts[i],
                                    node_agent_argv(deployment.xpuperf, node_request(plan, deployment, spec, i))));
  return commands;
}

RoundOutcome Launcher::run_round(const Plan& plan, const Deployment& deployment, const RoundSpec& spec,
                                 const std::atomic<int>& stop) {
  const std::size_t n = spec.hosts.size();
  std::vector<NodeOutcome> nodes(n);
  std::vector<std::unique_ptr<Process>> agents(n);
  for (std::size_t i = 0; i < n; ++i) {
    NodeOutcome& node = nodes[i];
    node.host = spec.hosts[i];
    node.node_rank = static_cast<int>(i);
    const NodeRequest request = node_request(plan, deployment, spec, i);
    node.dir = request.out_dir;
    fs::create_directories(node.dir);
    const std::vector<std::string> agent = node_agent_argv(deployment.xpuperf, request);
    ProcessSpec process;
    process.argv = node_command(plan, node.host, agent);
    process.log_path = node.dir + "/node_agent.log";
    try {
      agents[i] = Process::start(process);
    } catch (const ProcessError& e) {
      node.reason = std::string("cannot start the node agent: ") + e.what();
    }
  }

  // Wait for every node; the first that fails, the backstop deadline or `stop` ends the rest.
  // (Each agent keeps the time limit itself; the deadline is for an agent that hangs.)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(plan.case_time_limit_s + 60);
  std::vector<std::optional<ExitStatus>> ended(n);
  bool stopping = false, interrupted = false;
  while (true) {
    bool all_done = true;
    for (std::size_t i = 0; i < n; ++i) {
      if (ended[i] || !agents[i]) continue;
      if (agents[i]->running()) {
        all_done = false;
        continue;
      }
      ended[i] = agents[i]->wait();
      if (!ended[i]->ok()) stopping = true;
    }
    if (std::find(agents.begin(), agents.end(), nullptr) != agents.end()) stopping = true;
    if (stop != 0) stopping = interrupted = true;
    if (std::chrono::steady_clock::now() > deadline) stopping = true;
    if (all_done || stopping) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!agents[i] || ended[i]) continue;
    stop_node(plan, nodes[i].host, nodes[i].dir);
    ended[i] = agents[i]->stop(std::chrono::seconds(20));  // TERM: the agent stops its ranks and reports
  }

  for (std::size_t i = 0; i < n; ++i) {
    NodeOutcome& node = nodes[i];
    if (agents[i]) {
      collect(plan, node.host, node.dir, spec.round_dir);
      if (!read_node_status(node))
        node.reason =
            "the node agent " + ended[i]->describe() + " without a status (see " + node.dir + "/node_agent.log)";
    }
  }
  return round_outcome(nodes, interrupted);
}

std::unique_ptr<Launcher> make_launcher(const Plan& plan) {
  if (plan.launcher == "local") return std::make_unique<LocalLauncher>();
  if (plan.launcher == "ssh") return make_ssh_launcher();
  if (plan.launcher == "slurm") return make_slurm_launcher();
  throw std::runtime_error("unknown launcher '" + plan.launcher + "'");
}

}  // namespace xpuperf
