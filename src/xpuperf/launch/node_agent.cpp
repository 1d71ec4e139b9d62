#include "xpuperf/launch/node_agent.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include "xpuperf/core/case_family.h"
#include "xpuperf/core/files.h"
#include "xpuperf/core/perflog.h"
#include "xpuperf/core/plan.h"
#include "xpuperf/core/process.h"
#include "xpuperf/core/rank_env.h"
#include "xpuperf/core/repo.h"
#include "xpuperf/core/training_config.h"
#include "xpuperf/core/vendor_spec.h"
#include "xpuperf/launch/container.h"
#include "xpuperf/launch/sys_info.h"
#include "xpuperf/monitor/sampler.h"

namespace xpuperf {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::atomic<int> g_stop_signal{0};

// Writes back dirty pages and drops the page cache, so every round reads its data from disk
// alike. Returns what happened, for node_status.json.
std::string clear_page_cache() {
  ::sync();
  std::ofstream drop("/proc/sys/vm/drop_caches");
  if (drop && (drop << "3\n") && drop.flush()) return "page cache dropped";
  return "not permitted: cannot write /proc/sys/vm/drop_caches (needs root outside a read-only /proc/sys); "
         "rounds may read data from the cache";
}
void on_stop_signal(int sig) {
  g_stop_signal = sig;
}

// The last line a rank printed that is not a PerfLog event: usually what went wrong.
std::string last_message(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty() && line.find(kPerfLogTag) == std::string::npos) last = line;
  constexpr std::size_t kMax = 300;
  return last.size() > kMax ? last.substr(0, kMax) + "..." : last;
}

json exit_json(const ExitStatus& s) {
  json j = {{"description", s.describe()}, {"timed_out", s.timed_out}, {"stopped", s.stopped}};
  if (s.kind == ExitStatus::Kind::Exited)
    j["exit_code"] = s.code;
  else
    j["signal"] = s.signal;
  return j;
}

// This binary's real path: what a container mounts and runs (its /proc/self/exe is not ours).
std::string own_binary() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("/proc/self/exe") : exe.string();
}

bool is_inside(const fs::path& path, const fs::path& dir) {
  const fs::path relative = path.lexically_normal().lexically_relative(dir.lexically_normal());
  return !relative.empty() && *relative.begin() != "..";
}

// The round's container: started after the image is ready, removed when the agent leaves
// (whatever happened: rank failure, time limit, signal; rm -f also ends every process in it).
class RoundContainer {
 public:
  // `suffix` makes the name unique on the host: the agent's pid.
  RoundContainer(const NodeRequest& request, json& status, const std::string& suffix = std::to_string(::getpid()))
      : request_(request), status_(status) {
    if (!request.container.enabled()) return;
    cli_ = std::make_unique<ContainerCli>(request.container.engine);
    image_ = container_image(request.container, request.vendor);
    planned_name_ = container_name(request.out_dir, suffix);
  }
  ~RoundContainer() { remove(); }
  RoundContainer(const RoundContainer&) = delete;
  RoundContainer& operator=(const RoundContainer&) = delete;

  bool enabled() const { return cli_ != nullptr; }

  // Prepares the image and starts the container; "" when it runs, else why not.
  std::string start() {
    const ImagePrepared prepared =
        prepare_image(*cli_, request_.container, image_, recipe_dir(request_.root, request_.vendor),
                      request_.out_dir + "/container_build.log");
    status_["container"] = {{"engine", cli_->engine()}, {"image", image_}, {"image_prepared", prepared.what}};
    std::cerr << "xpuperf node: container: " << prepared.what << "\n";
    if (!prepared.ok) return prepared.what;
    ProcessSpec spec;
    spec.argv = cli_->run(run_spec());
    spec.log_path = request_.out_dir + "/container.log";
    try {
      const ExitStatus s = run_process(spec, std::chrono::minutes(10));
      name_ = planned_name_;  // remove it even when run failed half-way
      status_["container"]["name"] = name_;
      if (!s.ok())
        return "cannot start container " + name_ + " (" + cli_->engine() + " run " + s.describe() +
               "): " + last_message(spec.log_path);
    } catch (const ProcessError& e) {
      return "cannot run " + cli_->engine() + ": " + e.what();
    }
    return "";
  }

  // What start() runs: the image check, the build (only when the recipe changed), `run`.
  std::vector<std::vector<std::string>> plan_commands() const {
    std::vector<std::vector<std::string>> commands = {cli_->recipe_label(image_)};
    const std::string recipe = recipe_dir(request_.root, request_.vendor);
    if (request_.container.build && fs::exists(recipe + "/Dockerfile"))
      commands.push_back(cli_->build(image_, recipe, recipe_hash(recipe)));
    commands.push_back(cli_->run(run_spec()));
    return commands;
  }
  std::vector<std::string> remove_command() const { return cli_->remove(planned_name_); }

  // A rank's command inside the container: the vendor's environment_variables.sh first.
  void wrap(ProcessSpec& rank, const std::string& case_config_dir) const {
    std::vector<std::pair<std::string, std::string>> env(rank.env.begin(), rank.env.end());
    std::vector<std::string> argv = rank.argv;
    argv[0] = own_binary();
    const std::string vendor_dir = Repo(request_.root).vendor_dir(request_.vendor);
    std::vector<std::string> env_files = {vendor_dir + "/environment_variables.sh"};
    if (!case_config_dir.empty()) env_files.push_back(case_config_dir + "/environment_variables.sh");
    rank.argv = cli_->exec(planned_name_, env, request_.out_dir, env_files, argv);
    rank.env.clear();
  }

  void remove() {
    if (name_.empty()) return;
    ProcessSpec spec;
    spec.argv = cli_->remove(name_);
    spec.log_path = request_.out_dir + "/container.log";
    bool removed = false;
    try {
      removed = run_process(spec, std::chrono::minutes(2)).ok();
    } catch (const ProcessError&) {
    }
    status_["container"]["removed"] = removed;
    if (!removed) std::cerr << "xpuperf node: could not remove container " << name_ << " (see container.log)\n";
    name_.clear();
  }

 private:
  ContainerRun run_spec() const {
    ContainerRun run;
    run.name = planned_name_;
    run.image = image_;
    run.privileged = request_.container.privileged;
    run.options = request_.container.run_options;
    run.env = request_.container.env;
    // The deployment (read-only), this node's folder (written), the data (read-only), at the
    // same paths as on the host, so that every path in the rank's command line holds.
    run.volumes.push_back(request_.root + ":" + request_.root + ":ro");
    // xpuperf, and xpuperf-torch beside it, which the rank becomes when it trains (cli/torch_entry.h).
    for (const std::string& binary : {own_binary(), torch_binary()})
      if (!binary.empty() && !is_inside(binary, request_.root)) run.volumes.push_back(binary + ":" + binary + ":ro");
    run.volumes.push_back(request_.out_dir + ":" + request_.out_dir);
    std::error_code ec;
    if (!request_.data_dir.empty() && fs::is_directory(request_.data_dir, ec))
      run.volumes.push_back(request_.data_dir + ":" + request_.data_dir + ":ro");
    run.volumes.insert(run.volumes.end(), request_.container.mounts.begin(), request_.container.mounts.end());
    return run;
  }

  const NodeRequest& request_;
  json& status_;
  std::unique_ptr<ContainerCli> cli_;
  std::string image_, planned_name_;
  std::string name_;  // set once started: what remove() removes
};

}  // namespace

// The first line scontrol prints, or "" when it fails.
std::string scontrol_first_line(const std::vector<std::string>& argv, const std::string& scratch) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.log_path = scratch;
  std::string first;
  try {
    if (run_process(spec, std::chrono::seconds(20)).ok()) {
      std::ifstream in(scratch);
      std::getline(in, first);
    }
  } catch (const ProcessError&) {
  }
  fs::remove(scratch);
  return first;
}

// A Slurm node's NodeAddr (its name when scontrol does not say).
std::string slurm_node_addr(const std::string& node, const std::string& scratch) {
  ProcessSpec spec;
  spec.argv = {"scontrol", "show", "node", node};
  spec.log_path = scratch;
  std::string addr = node;
  try {
    if (run_process(spec, std::chrono::seconds(20)).ok()) {
      std::ifstream in(scratch);
      for (std::string word; in >> word;)
        if (word.rfind("NodeAddr=", 0) == 0) addr = word.substr(9);
    }
  } catch (const ProcessError&) {
  }
  fs::remove(scratch);
  return addr;
}

// Fills in what Slurm says about this node (node_agent.h, `slurm`).
std::optional<NodeRequest> from_slurm(NodeRequest request) {
  const char* node_id = std::getenv("SLURM_NODEID");
  const char* node_name = std::getenv("SLURMD_NODENAME");
  const char* node_list = std::getenv("SLURM_JOB_NODELIST");
  if (!node_id || !node_name || !node_list) {
    std::cerr
        << "xpuperf node: --slurm needs SLURM_NODEID, SLURMD_NODENAME and SLURM_JOB_NODELIST (start it with srun)\n";
    return std::nullopt;
  }
  request.node_rank = std::atoi(node_id);
  request.out_dir += "/" + std::string(node_name) + "_noderank" + std::string(node_id);
  // The master is the allocation's first node; scontrol expands Slurm's compressed list, and
  // gives each node's address (NodeAddr), which may differ from its name.
  fs::create_directories(fs::path(request.out_dir).parent_path());
  const std::string scratch = request.out_dir + ".scontrol";
  const std::string first = scontrol_first_line({"scontrol", "show", "hostnames", node_list}, scratch);
  request.master_addr = slurm_node_addr(first.empty() ? node_name : first, scratch);
  request.node_addr = slurm_node_addr(node_name, scratch);
  return request;
}

namespace {

// The case's merged config, as the rank will read it.
std::optional<Config> node_config(const NodeRequest& request, const CaseKey& key, Diagnostics& diags) {
  return case_family(key).load_config(
      Repo(request.root), key, {request.vendor, request.data_dir, request.sets, std::nullopt, {"plan", 0}, {}}, diags);
}

// Local rank `local`'s command and environment (global rank = node_rank * nproc + local).
ProcessSpec rank_process(const NodeRequest& request, const CaseKey& key, const Config& config, int local) {
  const CaseFamily& family = case_family(key);
  RankEnv env;
  env.rank = request.node_rank * key.nproc + local;
  env.local_rank = local;
  env.world_size = key.world_size();
  env.local_world_size = key.nproc;
  env.node_rank = request.node_rank;
  env.master_addr = request.master_addr;
  env.master_port = request.master_port;
  ProcessSpec spec;
  spec.argv = family.rank_argv(key, {request.root, request.vendor, request.data_dir, request.out_dir, request.sets});
  spec.env = env.to_env();
  // A base case that measures the whole host (peer copies between every pair) sees every device.
  std::string visible;
  const int first = std::max(0, request.first_device);
  for (int i = 0; i < key.nproc; ++i) visible += (i ? "," : "") + std::to_string(first + i);
  if (!family.sees_every_device(config)) spec.env[request.visible_devices_env] = visible;
  // CUDA numbers devices fastest first by default; NVML (the monitors) in PCI bus order. One
  // order for both, so that the monitors charge a round with the devices it ran on.
  if (!std::getenv("CUDA_DEVICE_ORDER")) spec.env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  if (!request.node_addr.empty()) spec.env["XPUPERF_NODE_ADDR"] = request.node_addr;
  return spec;
}

// A training case's vendor config folder (its environment_variables.sh), "" for others.
std::string case_config_dir(const NodeRequest& request, const CaseKey& key) {
  return case_family(key).vendor_config_dir(Repo(request.root), request.vendor, key);
}

}  // namespace

std::vector<std::vector<std::string>> node_dry_run(const NodeRequest& request, std::string& problem) {
  Diagnostics diags;
  const auto key = parse_case_key(request.case_key, {"--case-key", 0}, diags);
  const std::optional<Config> config = key ? node_config(request, *key, diags) : std::nullopt;
  if (!config) {
    problem = diags.format(Severity::Error);
    return {};
  }
  std::vector<std::vector<std::string>> commands;
  json status;
  RoundContainer container(request, status, "PID");
  if (container.enabled()) {
    const auto plan = container.plan_commands();
    commands.insert(commands.end(), plan.begin(), plan.end());
  }
  for (int local = 0; local < key->nproc; ++local) {
    ProcessSpec spec = rank_process(request, *key, *config, local);
    if (container.enabled()) {
      container.wrap(spec, case_config_dir(request, *key));
    } else {
      std::vector<std::string> with_env = {"env"};
      for (const auto& [k, v] : spec.env) with_env.push_back(k + "=" + v);
      with_env.insert(with_env.end(), spec.argv.begin(), spec.argv.end());
      spec.argv = with_env;
    }
    commands.push_back(spec.argv);
  }
  if (container.enabled()) commands.push_back(container.remove_command());
  return commands;
}

namespace {

// Samplers from before the first rank starts until after the last one ends: the host's, the vendor's
// tool (vendors/<v>/monitor.yaml) and its monitor library, charged with this node's devices.
std::unique_ptr<monitor::Monitor> start_monitors(const NodeRequest& request, const CaseKey& key, const Config& config,
                                                 json& status) {
  const std::string node = request.node_addr.empty() ? "node" + std::to_string(request.node_rank) : request.node_addr;
  auto monitors = std::make_unique<monitor::Monitor>(request.out_dir + "/monitor.csv", node, request.monitor_period_s);
  std::optional<VendorSpec> vendor;
  try {
    vendor = load_vendor_spec(Repo(request.root), request.vendor);
  } catch (const ConfigError& e) {
    std::cerr << "xpuperf node: the vendor's monitors left out: " << e.what() << "\n";
  }
  for (auto& sampler : monitor::default_samplers()) monitors->add(std::move(sampler));
  // A vendor's own tool, declared without C++ (vendors/<v>/monitor.yaml).
  std::string error;
  auto vendor_sampler =
      monitor::load_command_sampler(Repo(request.root).vendor_dir(request.vendor) + "/monitor.yaml", error);
  if (vendor_sampler) monitors->add(std::move(vendor_sampler));
  if (!error.empty()) std::cerr << "xpuperf node: vendor monitor left out: " << error << "\n";
  // The vendor's monitor library (vendor.yaml: monitor: library, or NVIDIA's for monitor: nvml and a
  // folder without vendor.yaml).
  if (auto library = monitor::vendor_library_sampler(vendor ? &*vendor : nullptr, error))
    monitors->add(std::move(library));
  if (!error.empty()) std::cerr << "xpuperf node: vendor monitor library left out: " << error << "\n";
  if (request.first_device >= 0 && !config.get_bool("whole_host", false)) {
    std::set<std::string> mine;
    json devices = json::array();
    for (int i = 0; i < key.nproc; ++i) {
      mine.insert("gpu" + std::to_string(request.first_device + i));
      devices.push_back("gpu" + std::to_string(request.first_device + i));
    }
    monitors->only_accelerators(mine);
    status["devices"] = devices;  // what the summary charges this node for
  }
  monitors->start();
  return monitors;
}

// The ranks of this node, started: global rank = node_rank * nproc + local rank. Empty `problem`
// unless one could not start (then the ones started are stopped).
std::vector<std::unique_ptr<Process>> start_ranks(const NodeRequest& request, const CaseKey& key, const Config& config,
                                                  RoundContainer& container, std::vector<int>& global_ranks,
                                                  std::string& problem) {
  std::vector<std::unique_ptr<Process>> ranks;
  for (int local = 0; local < key.nproc; ++local) {
    ProcessSpec spec = rank_process(request, key, config, local);
    const int rank = request.node_rank * key.nproc + local;
    if (container.enabled()) container.wrap(spec, case_config_dir(request, key));
    spec.log_path = request.out_dir + "/rank" + std::to_string(rank) + ".out.log";
    spec.echo = request.echo;
    spec.echo_prefix = "[rank " + std::to_string(rank) + "] ";
    try {
      ranks.push_back(Process::start(spec));
      global_ranks.push_back(rank);
    } catch (const ProcessError& e) {
      for (auto& r : ranks) r->stop(std::chrono::seconds(5));
      problem = "cannot start rank " + std::to_string(rank) + ": " + e.what();
      return {};
    }
  }
  return ranks;
}

// The node's exit code and reason for how the wait for its ranks ended.
std::pair<int, std::string> node_result(const GroupOutcome& outcome, const std::vector<int>& global_ranks,
                                        const NodeRequest& request) {
  switch (outcome.end) {
    case GroupOutcome::End::AllExited:
      break;
    case GroupOutcome::End::OneFailed: {
      const int failed = global_ranks[static_cast<std::size_t>(outcome.failed)];
      std::string reason = "rank " + std::to_string(failed) + " " +
                           outcome.statuses[static_cast<std::size_t>(outcome.failed)].describe();
      const std::string said = last_message(request.out_dir + "/rank" + std::to_string(failed) + ".out.log");
      if (!said.empty()) reason += ": " + said;
      return {kNodeRankFailed, reason};
    }
    case GroupOutcome::End::Stopped:
      return {kNodeInterrupted, "stopped by signal " + std::to_string(g_stop_signal.load())};
    case GroupOutcome::End::TimedOut:
      return {kNodeTimedOut,
              "time limit of " + std::to_string(static_cast<long long>(request.time_limit_s)) + " s passed"};
  }
  return {kNodeOk, "all ranks exited with code 0"};
}

// The round on this node once its config is merged: the container, the monitors, the ranks and the
// wait for them; node_status.json's fields go into `status`. The exit code and reason.
std::pair<int, std::string> run_round_here(const NodeRequest& request, const CaseKey& key, const Config& config,
                                           json& status) {
  // From here on a stop signal is recorded, not fatal: a round's container may exist from the
  // next line on, and it must be removed and node_status.json written however the round ends.
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  RoundContainer container(request, status);
  if (container.enabled()) {
    const std::string problem = container.start();
    if (!problem.empty()) {
      container.remove();
      return {kNodeBadInput, "container: " + problem};
    }
  }
  auto monitors = request.monitor_period_s > 0 ? start_monitors(request, key, config, status) : nullptr;
  const auto end_services = [&] {
    if (monitors) monitors->stop();
    container.remove();
  };
  if (g_stop_signal != 0) {  // stopped while the container or the monitors started
    end_services();
    return {kNodeInterrupted,
            "stopped by signal " + std::to_string(g_stop_signal.load()) + " before the ranks started"};
  }
  std::vector<int> global_ranks;
  std::string problem;
  auto ranks = start_ranks(request, key, config, container, global_ranks, problem);
  if (!problem.empty()) {
    container.remove();
    return {kNodeBadInput, problem};
  }
  // Wait for all ranks; the first failure (after the others' settling time), the time limit or a
  // signal stops the rest.
  status["ranks_started_unix"] = unix_seconds();
  std::optional<Process::Duration> limit;
  if (request.time_limit_s > 0) limit = Process::Duration(request.time_limit_s);
  const GroupOutcome outcome = wait_all(ranks, limit, &g_stop_signal, std::chrono::seconds(5), kRankSettle);
  status["ranks_ended_unix"] = unix_seconds();
  end_services();
  for (std::size_t i = 0; i < ranks.size(); ++i)
    status["ranks"].push_back(
        {{"rank", global_ranks[i]}, {"pid", ranks[i]->pid()}, {"status", exit_json(outcome.statuses[i])}});
  return node_result(outcome, global_ranks, request);
}

}  // namespace

int run_node(const NodeRequest& original) {
  NodeRequest request = original;
  if (original.slurm) {
    auto filled = from_slurm(original);
    if (!filled) return kNodeBadInput;
    request = *filled;
  }
  std::error_code ec;
  fs::create_directories(request.out_dir, ec);
  if (ec) {
    std::cerr << "xpuperf node: cannot create " << request.out_dir << ": " << ec.message() << "\n";
    return kNodeBadInput;
  }
  json status = {{"node_rank", request.node_rank}, {"case", request.case_key}, {"ranks", json::array()}};
  auto finish = [&](int code, const std::string& reason) {
    status["exit_code"] = code;
    status["ok"] = code == kNodeOk;
    status["reason"] = reason;
    write_json_file(request.out_dir + "/node_status.json", status);
    return code;
  };
  write_json_file(request.out_dir + "/sys_info.json", collect_sys_info());
  std::ofstream(request.out_dir + "/node_agent.pid") << ::getpid() << "\n";  // how a launcher stops us
  Diagnostics diags;
  const auto key = parse_case_key(request.case_key, {"--case-key", 0}, diags);
  const std::optional<Config> config = key ? node_config(request, *key, diags) : std::nullopt;
  if (!config) return finish(kNodeBadInput, "config: " + diags.format(Severity::Error));
  std::ofstream(request.out_dir + "/config.yaml")
      << config->to_annotated_yaml("merged config of " + key->str() + ", vendor " + request.vendor);
  if (request.clear_caches) {
    status["clear_caches"] = clear_page_cache();
    std::cerr << "xpuperf node: clear_caches: " << status["clear_caches"].get<std::string>() << "\n";
  }
  const auto [code, reason] = run_round_here(request, *key, *config, status);
  return finish(code, reason);
}

}  // namespace xpuperf
