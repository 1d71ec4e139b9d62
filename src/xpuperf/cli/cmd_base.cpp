// `xpuperf base`: one base case (hardware micro-benchmark) in this process, or its ranks on this
// host for the collectives (--nproc N without a launcher).

#include <algorithm>
#include <iostream>

#include "xpuperf/base/base_benchmark.h"
#include "xpuperf/base/base_runner.h"
#include "xpuperf/cli/commands.h"
#include "xpuperf/cli/local_ranks.h"
#include "xpuperf/cli/torch_entry.h"
#include "xpuperf/core/vendor_spec.h"

namespace xpuperf::cli {

namespace {

struct BaseOptions {
  std::string metric;
  std::string vendor = "cpu";
  std::string hardware;
  std::string backend = "auto";
  int device = -1;
  int nproc = 1;
  int master_port = 0;
  std::vector<std::string> sets;
  bool list = false;
};

int list_base(const Repo& repo) {
  std::cout << "| base case | built for | config |\n| --- | --- | --- |\n";
  for (const auto& metric : repo.base_metrics()) {
    std::cout << "| " << metric << " | " << join_or_none(base::base_backends(metric)) << " | "
              << repo.base_config(metric) << " |\n";
  }
  return 0;
}

int run_base_command(const GlobalOptions& global, const BaseOptions& opts) {
  const Repo repo = find_repo(global);
  if (opts.list) {
    hand_over_to_torch(global.argv);  // the list names the LibTorch implementations too
    return list_base(repo);
  }
  if (opts.metric.empty()) throw CommandError("name a base case (e.g. xpuperf base computation-FP32), or --list them");
  if (!launched_as_rank() && opts.nproc > 1) return spawn_local_ranks(opts.nproc, opts.master_port, global.argv);
  // The collectives, the CPU's BF16 GEMM, PyTorch's primitives and whatever a vendor's plug-in
  // brings are LibTorch's: they run in xpuperf-torch, which loads the plug-in first.
  const VendorSpec vendor = load_vendor_spec(repo, opts.vendor);
  const auto here = base::base_backends(opts.metric);
  if ((vendor.has_plugin() && !vendor.is_builtin_plugin()) ||
      std::find(here.begin(), here.end(), base::resolve_backend(opts.backend, opts.metric, vendor)) == here.end())
    hand_over_to_torch(global.argv);
  if (torch_entry() && torch_entry()->activate_vendor) {
    try {
      torch_entry()->activate_vendor(vendor);
    } catch (const std::exception& e) {
      std::cerr << "xpuperf: error: " << e.what() << "\n";
      return 1;
    }
  }
  Diagnostics diags;
  auto env = read_rank_env(diags);
  if (!env) {
    std::cerr << diags.format();
    return 1;
  }
  base::BaseRequest request;
  request.metric = opts.metric;
  request.vendor = opts.vendor;
  request.hardware = opts.hardware.empty() ? (opts.vendor == "cpu" ? "CPU" : "") : opts.hardware;
  request.backend = opts.backend;
  request.device = opts.device;
  request.sets = opts.sets;
  request.env = *env;
  request.vendor_spec = vendor;
  return base::run_base(repo, request, std::cout, std::cerr);
}

}  // namespace

void add_base_command(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd = app.add_subcommand("base", "Run one base case (hardware micro-benchmark) and print its figures");
  cmd->footer(
      "Base cases live in cases/base/<metric>/config.yaml (`xpuperf base --list`). The figures go to stdout as a "
      "table and as a PerfLog FINISHED line, each beside the vendor's datasheet figure (vendors/<v>/specs.yaml, "
      "chips.<hardware>) when there is one.\nExit codes: 0 measured and checked, 1 bad input or failure, 2 the "
      "results check failed, 3 not built for this backend or cannot run on this host.");
  auto opts = std::make_shared<BaseOptions>();
  cmd->add_option("metric", opts->metric, "Base case, e.g. computation-BF16, main_memory-bandwidth");
  cmd->add_flag("--list", opts->list, "List the base cases and the backends built for each");
  cmd->add_option("--vendor", opts->vendor, "Vendor (its specs.yaml and vendors/<v>/base/<metric>.yaml)")
      ->capture_default_str();
  cmd->add_option("--hardware", opts->hardware, "Chip name in the vendor's specs.yaml (default CPU for cpu)");
  cmd->add_option("--backend", opts->backend,
                  "auto (the vendor's device: cpu, cuda, or a plug-in's own implementation where it has one, else "
                  "torch), cpu, cuda, torch (PyTorch's primitives on the vendor's device: any chip), or the name "
                  "a plug-in registers its own under (its vendor's)")
      ->capture_default_str();
  cmd->add_option("--device", opts->device, "Accelerator index (default: the local rank's)");
  cmd->add_option("--nproc", opts->nproc, "Ranks on this host (collectives)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--master-port", opts->master_port, "Rendezvous port for local ranks (default: a free one)");
  cmd->add_option("--set", opts->sets, "Override a parameter: --set key=value (repeatable)");
  cmd->callback([&global, &exit_code, opts] { exit_code = run_base_command(global, *opts); });
}

}  // namespace xpuperf::cli
