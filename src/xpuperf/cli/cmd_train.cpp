// `xpuperf train`: one training case in this process (the counterpart of FlagPerf's
// run_pretraining.py), or its ranks on this host when --nproc > 1 and no launcher set RANK.

#include <iostream>
#include <thread>

#include "xpuperf/cli/commands.h"
#include "xpuperf/cli/local_ranks.h"
#include "xpuperf/cli/torch_entry.h"
#include "xpuperf/core/process.h"
#include "xpuperf/core/rank_env.h"
#include "xpuperf/core/training_config.h"
#include "xpuperf/core/vendor_spec.h"

namespace xpuperf::cli {

namespace {

struct TrainOptions {
  std::string model;
  std::string framework = "libtorch";
  std::string vendor = "cpu";
  std::string hardware = "CPU";
  int nnodes = 1;
  int nproc = 1;
  std::string data_dir;
  std::vector<std::string> sets;
  int master_port = 0;
};

int run_train(const GlobalOptions& global, const TrainOptions& opts, const std::vector<std::string>& argv) {
  // A rank trains in xpuperf-torch; the process that starts this host's ranks needs no LibTorch.
  if (launched_as_rank() || opts.nnodes * opts.nproc == 1) hand_over_to_torch(argv);
  const Repo repo = find_repo(global);
  Diagnostics diags;
  TrainingConfigRequest request;
  const std::string key_text = opts.model + ":" + opts.framework + ":" + opts.hardware + ":" +
                               std::to_string(opts.nnodes) + ":" + std::to_string(opts.nproc) + ":1";
  const auto key = parse_case_key(key_text, {"command line", 0}, diags);
  if (key) {
    request.key = *key;
    request.vendor = opts.vendor;
    request.data_dir = opts.data_dir;
    request.where = {"command line", 0};
    request.vendor_where = {"--vendor", 0};
    request.data_dir_where = {"--data-dir", 0};
    request.sets = parse_set_overrides(opts.sets, diags);
  }
  std::optional<Config> config;
  if (key) config = load_training_config(repo, request, diags);
  if (!launched_as_rank() || std::getenv("RANK") == std::string("0")) std::cerr << diags.format(Severity::Warning);
  if (!config || diags.has_errors()) return 1;

  if (!torch_entry() && torch_binary().empty()) throw CommandError(without_torch("train"));
  if (!launched_as_rank() && key->world_size() > 1) {
    if (key->nnodes > 1)
      throw CommandError("--nnodes " + std::to_string(key->nnodes) +
                         " needs a launcher: run a plan with `xpuperf run`, or start each rank with RANK, "
                         "LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set");
    return spawn_local_ranks(opts.nproc, opts.master_port, argv);
  }
  Diagnostics env_diags;
  auto env = read_rank_env(env_diags);
  if (!env) {
    std::cerr << env_diags.format();
    return 1;
  }
  if (env->world_size != key->world_size())
    throw CommandError("WORLD_SIZE is " + std::to_string(env->world_size) + " but --nnodes x --nproc is " +
                       std::to_string(key->world_size()));
  TrainingRankRequest rank_request{opts.model, opts.framework, opts.vendor,
                                   *config,    *env,           load_vendor_spec(repo, opts.vendor)};
  return torch_entry()->train_rank(rank_request);
}

}  // namespace

void add_train_command(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd =
      app.add_subcommand("train", "Train one case in this process (or its ranks on this host) and print PerfLog");
  cmd->footer(
      "Launchers set RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT; without them, "
      "--nproc N starts N ranks here.\nExit codes: 0 trained (FINISHED says whether it converged), 1 bad input, "
      "3 case not built in.");
  auto opts = std::make_shared<TrainOptions>();
  cmd->add_option("--case", opts->model, "Model of the case, e.g. lenet5")->required();
  add_case_options(cmd, {&opts->framework, &opts->vendor, &opts->data_dir, &opts->sets});
  cmd->add_option("--hardware", opts->hardware, "Hardware name of the vendor config")->capture_default_str();
  cmd->add_option("--nnodes", opts->nnodes, "Hosts")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--nproc", opts->nproc, "Processes per host")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--master-port", opts->master_port, "Rendezvous port for local ranks (default: a free one)");
  cmd->callback([&global, &exit_code, opts] { exit_code = run_train(global, *opts, global.argv); });
}

}  // namespace xpuperf::cli
