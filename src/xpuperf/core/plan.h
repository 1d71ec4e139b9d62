#pragma once
// A plan: what to run and where. The successor of FlagPerf's test_conf.py + cluster_conf.py
// (training) and host.yaml (inference), in one YAML file.

#include <optional>
#include <string>
#include <vector>

#include "xpuperf/core/case_key.h"
#include "xpuperf/core/config.h"
#include "xpuperf/core/repo.h"

namespace xpuperf {

struct SshSettings {
  int port = 22;
  std::string user;           // empty: the user running xpuperf
  std::string known_hosts;    // empty: the user's own known_hosts
  std::string identity_file;  // empty: ssh's defaults
  int connect_timeout_s = 10;
};

// Where the ranks run: on the host (engine none) or in one container per node and round.
struct ContainerSettings {
  std::string engine = "none";           // none, docker, podman
  std::string image;                     // to run as is; with a recipe, the tag it is built as
  bool build = true;                     // build from vendors/<v>/container/Dockerfile when there is one
  std::vector<std::string> run_options;  // extra `run` arguments, e.g. [--gpus, all]
  std::vector<std::string> mounts;       // extra volumes, host:container[:options]
  std::vector<std::pair<std::string, std::string>> env;  // extra environment in the container
  bool privileged = false;                               // only when asked: least privilege by default
  bool enabled() const { return engine != "none"; }
};

struct PlanCase {
  CaseKey key;                    // base cases: framework "base" (base_config.h)
  std::string data_dir;           // empty for base cases
  Source source;                  // the plan line of the case
  std::vector<std::string> sets;  // base and inference cases: the plan's overrides, as key=value
};

inline constexpr int kDefaultMasterPort = 29501;

struct Plan {
  std::string file;
  std::string vendor;
  std::string log_dir = "results";
  std::string log_level = "info";
  std::vector<std::string> hosts = {"localhost"};
  SshSettings ssh;
  std::string launcher = "local";  // local, ssh, slurm
  std::string slurm_partition;     // slurm only; empty: the allocation's or the default
  // 0 (unset): each round of the local launcher takes a free port from the system, so runs side by
  // side on one machine never meet; kDefaultMasterPort across hosts (ssh, slurm).
  int master_port = 0;
  std::string visible_devices_env = "CUDA_VISIBLE_DEVICES";
  std::string shm_size = "32G";
  bool clear_caches = false;
  double case_time_limit_s = 24 * 3600.0;
  double monitor_period_s = 1.0;
  std::string history_db;   // the run history; empty: the default (report/history.h); "none": off  // seconds between
                            // monitor samples (0.1 at least)
  std::string deploy_path;  // where xpuperf lives on every host; empty: this checkout
  ContainerSettings container;
  std::vector<PlanCase> cases;  // `base:`, `operation:`, `cases:`, then `inference:`, each in plan order
  Config raw;                   // the plan as written, with sources
};

// Every top-level key a plan may have.
const std::vector<std::string>& plan_keys();

// Reads and validates a plan: types, allowed values, host names, case keys, nnodes against the
// host count. Every problem goes to `diags`; nothing is returned when any is an error.
std::optional<Plan> load_plan(const std::string& path, Diagnostics& diags);
std::optional<Plan> load_plan_text(const std::string& text, const std::string& name, Diagnostics& diags);
// The same, but returns what could be read even when there were errors (nothing only when the
// YAML itself is unreadable), so that `check` can go on to look at the cases too.
std::optional<Plan> read_plan_partially(const std::string& text, const std::string& name, Diagnostics& diags);

// Checks what the plan names against the content tree: the vendor folder, every case's merged
// config (case, framework, vendor hardware config, mutable params) and, for local runs, that
// the data folders exist.
void check_plan(const Plan& plan, const Repo& repo, Diagnostics& diags);

// What the vendor's vendor.yaml says where the plan is silent: visible_devices_env, and the
// container's run_options (container_device_options) when the plan runs in containers and gives
// none. A vendor.yaml that cannot be read is an error at the plan's vendor line.
void apply_vendor_defaults(Plan& plan, const Repo& repo, Diagnostics& diags);

// A host name, IPv4 or IPv6 address; rejects anything a shell could read as syntax.
bool is_valid_host(const std::string& host);
// "90", "90s", "15m", "2h", "1d" → seconds.
std::optional<double> parse_duration(const std::string& text);
// Whether a host is this machine (the local launcher runs only there).
bool is_local_host(const std::string& host);

}  // namespace xpuperf
