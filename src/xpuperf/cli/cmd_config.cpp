// `xpuperf config CASE_KEY`: prints a case's merged config with the source of every value.
// `xpuperf config --switches`: the training switches' declarations and their compatibility matrix.

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "xpuperf/cli/commands.h"
#include "xpuperf/core/inference_config.h"
#include "xpuperf/core/plan.h"
#include "xpuperf/core/switch_spec.h"
#include "xpuperf/core/training_config.h"

namespace xpuperf::cli {

namespace {

struct ConfigOptions {
  std::string key;
  std::string vendor;
  std::string data_dir;
  std::vector<std::string> sets;
  bool switches = false;  // --switches: the switches' table and matrix instead of a case's config
  bool markdown = false;  // --markdown: the table alone, in Markdown (docs/TRAINING.md's)
};

// The switches as declared beside their strategies (core/switch_spec.h).
int print_switches(bool markdown) {
  if (markdown) {
    std::cout << switch_table_markdown();
    return 0;
  }
  std::cout << "Training switches (each declared beside its strategy; `xpuperf sweep --strategies` takes the "
               "tokens):\n\n"
            << switch_table_markdown() << "\nWhat combines (the checks of `xpuperf check` refuse each x, "
            << "whatever the case):\n\n"
            << switch_matrix_text();
  return 0;
}

// Without --vendor: the one vendor that has a config for this case.
std::string pick_vendor(const std::vector<std::string>& candidates, const std::string& what) {
  if (candidates.size() == 1) return candidates[0];
  if (candidates.empty()) throw CommandError("no vendor has a config for " + what + "; pass --vendor");
  throw CommandError("several vendors have a config for " + what + " (" + join_or_none(candidates) +
                     "); pass --vendor");
}

int print_diagnostics(const Diagnostics& diags) {
  std::cerr << diags.format();
  return diags.has_errors() ? 1 : 0;
}

int run_training(const Repo& repo, const ConfigOptions& opts, const CaseKey& key) {
  std::string vendor = opts.vendor;
  if (vendor.empty()) {
    std::vector<std::string> candidates;
    for (const auto& v : repo.vendors()) {
      const auto configs = repo.vendor_training_configs(v, key.model, key.framework);
      if (std::find(configs.begin(), configs.end(), key.config_name()) != configs.end()) candidates.push_back(v);
    }
    vendor = pick_vendor(candidates, key.model + ":" + key.framework + " on " + key.config_name());
  }
  Diagnostics diags;
  TrainingConfigRequest request;
  request.key = key;
  request.vendor = vendor;
  request.data_dir = opts.data_dir;
  request.where = {"command line", 0};
  request.vendor_where = {opts.vendor.empty() ? "the only vendor with this config" : "--vendor", 0};
  request.data_dir_where = {"--data-dir", 0};
  request.sets = parse_set_overrides(opts.sets, diags);
  auto config = load_training_config(repo, request, diags);
  if (print_diagnostics(diags) != 0 || !config) return 1;
  std::cout << config->to_annotated_yaml(
      "merged config of " + key.str() + ", vendor " + vendor +
      "\npriority: --set > plan > vendor config > _base.yaml > the switches' declarations");
  return 0;
}

int run_inference(const Repo& repo, const ConfigOptions& opts, const std::string& name) {
  if (!opts.sets.empty() || !opts.data_dir.empty())
    throw CommandError("--set and --data-dir apply to training cases only");
  std::string vendor = opts.vendor;
  if (vendor.empty()) {
    std::vector<std::string> candidates;
    for (const auto& v : repo.vendors()) {
      std::error_code ec;
      if (std::filesystem::exists(repo.vendor_inference_config(v, name), ec)) candidates.push_back(v);
    }
    vendor = pick_vendor(candidates, "inference case " + name);
  }
  Diagnostics diags;
  auto config = load_inference_config(repo, name, vendor, {"command line", 0}, plan_keys(), diags);
  if (print_diagnostics(diags) != 0 || !config) return 1;
  std::cout << config->to_annotated_yaml("merged config of inference case " + name + ", vendor " + vendor +
                                         "\npriority: vendor config > configurations.yaml, parameters.yaml");
  return 0;
}

int run_config(const GlobalOptions& global, const ConfigOptions& opts) {
  if (opts.switches) return print_switches(opts.markdown);
  if (opts.markdown) throw CommandError("--markdown goes with --switches");
  if (opts.key.empty()) throw CommandError("name a case (e.g. lenet5:libtorch:CPU:1:1:1), or --switches");
  const Repo repo = find_repo(global);
  // FlagPerf's inference framework names inference cases "<case>:<framework>"; training keys have six fields.
  const auto colon = opts.key.find(':');
  if (colon != std::string::npos && opts.key.find(':', colon + 1) == std::string::npos)
    return run_inference(repo, opts, opts.key.substr(0, colon));
  Diagnostics diags;
  auto key = parse_case_key(opts.key, {"command line", 0}, diags);
  if (!key) return print_diagnostics(diags);
  return run_training(repo, opts, *key);
}

}  // namespace

void add_config_command(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd = app.add_subcommand("config",
                                 "Print a case's merged config with the source (file:line) of every value, or the "
                                 "training switches (--switches)");
  auto opts = std::make_shared<ConfigOptions>();
  cmd->add_option("case_key", opts->key,
                  "Training: model:framework:hardware:nnodes:nproc:repeat (e.g. lenet5:libtorch:CPU:1:1:1); "
                  "inference: case:framework");
  cmd->add_option("--vendor", opts->vendor, "Vendor whose config to apply (default: the only vendor with one)");
  cmd->add_option("--data-dir", opts->data_dir, "Data folder, as a plan would set it");
  cmd->add_option("--set", opts->sets, "Override a parameter: --set key=value (repeatable)");
  cmd->add_flag("--switches", opts->switches,
                "Print the training switches: values, defaults, sweep tokens, what each does not combine with yet, "
                "and the compatibility matrix");
  cmd->add_flag("--markdown", opts->markdown, "With --switches: the table alone, in Markdown");
  cmd->callback([&global, &exit_code, opts] { exit_code = run_config(global, *opts); });
}

}  // namespace xpuperf::cli
