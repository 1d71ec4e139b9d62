// `xpuperf node`: the node agent of one round (started by a launcher, not usually by hand).

#include "xpuperf/cli/commands.h"
#include "xpuperf/launch/node_agent.h"

namespace xpuperf::cli {

void add_node_command(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd = app.add_subcommand("node", "Run one round's ranks on this host (started by `xpuperf run`'s launchers)");
  cmd->footer(
      "Writes config.yaml, sys_info.json, rank<k>.out.log and node_status.json into --out.\n"
      "Exit codes: 0 all ranks ok, 1 a rank failed, 2 bad input, 124 time limit, 130 stopped by a signal.");
  auto request = std::make_shared<NodeRequest>();
  cmd->add_option("--case-key", request->case_key, "model:framework:hardware:nnodes:nproc:repeat")->required();
  cmd->add_option("--vendor", request->vendor, "Vendor")->required();
  cmd->add_option("--data-dir", request->data_dir, "Data folder of the case")->required();
  cmd->add_option("--node-rank", request->node_rank, "This node's rank")->capture_default_str();
  cmd->add_option("--node-addr", request->node_addr, "This host's address as the plan names it");
  cmd->add_option("--master-addr", request->master_addr, "Rendezvous host (node 0)")->capture_default_str();
  cmd->add_option("--master-port", request->master_port, "Rendezvous port")->capture_default_str();
  cmd->add_option("--out", request->out_dir, "This node's folder of the round")->required();
  cmd->add_option("--time-limit", request->time_limit_s, "Seconds before the ranks are stopped (0: none)");
  cmd->add_option("--visible-devices-env", request->visible_devices_env, "The vendor's device-visibility variable")
      ->capture_default_str();
  cmd->add_flag("--echo", request->echo, "Also print the ranks' output, prefixed with [rank k]");
  cmd->add_flag("--slurm", request->slurm,
                "Under srun: node rank, host and master from Slurm; --out is the round folder");
  cmd->add_option("--monitor-period", request->monitor_period_s, "Seconds between monitor samples (0: no monitors)")
      ->capture_default_str();
  cmd->add_option("--set", request->sets, "A base case's override, key=value (repeatable)");
  cmd->add_flag("--clear-caches", request->clear_caches, "Drop the page cache before starting the ranks (needs root)");
  cmd->add_option("--first-device", request->first_device,
                  "The first device of this node's ranks (several node agents on one host)")
      ->capture_default_str();
  auto& c = request->container;
  cmd->add_option("--container-engine", c.engine, "Run the ranks in a container: none, docker or podman")
      ->check(CLI::IsMember({"none", "docker", "podman"}))
      ->capture_default_str();
  cmd->add_option("--container-image", c.image, "The image (built from vendors/<v>/container when it has a recipe)");
  cmd->add_flag("!--no-container-build", c.build, "Use the image as it is, even when the vendor has a recipe");
  cmd->add_option("--container-run-option", c.run_options, "An extra `run` argument (repeatable; use =, e.g. =--gpus)");
  cmd->add_option("--container-mount", c.mounts, "An extra volume, /host:/container[:options] (repeatable)");
  auto env = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--container-env", *env, "An extra variable in the container, NAME=value (repeatable)");
  cmd->add_flag("--container-privileged", c.privileged, "Run the container --privileged (least privilege otherwise)");
  cmd->callback([&global, &exit_code, request, env] {
    for (const auto& e : *env) {
      const auto eq = e.find('=');
      if (eq == std::string::npos || eq == 0) throw CommandError("--container-env wants NAME=value, got '" + e + "'");
      request->container.env.emplace_back(e.substr(0, eq), e.substr(eq + 1));
    }
    request->root = find_repo(global).root();
    if (request->root.empty()) request->root = ".";
    exit_code = run_node(*request);
  });
}

}  // namespace xpuperf::cli
