// `xpuperf op --case NAME`: one operator case (FlagPerf's operator benchmarks): the operator at
// the config's shapes and dtypes, timed on the device and checked against float64 on the CPU.

#include <iostream>
#include <sstream>

#include "xpuperf/cli/commands.h"
#include "xpuperf/cli/local_ranks.h"
#include "xpuperf/cli/torch_entry.h"
#include "xpuperf/core/operation_config.h"
#include "xpuperf/core/roofline.h"
#include "xpuperf/core/specs.h"
#include "xpuperf/core/training_config.h"
#include "xpuperf/core/vendor_spec.h"
#include "xpuperf/report/measured_roof.h"

namespace xpuperf::cli {

namespace {

struct OpOptions {
  std::string name;
  std::string vendor = "cpu";
  std::string hardware;
  std::string device = "auto";
  std::vector<std::string> shapes;
  std::vector<std::string> dtypes;
  std::string json_out;
  std::string roof;    // a run folder or summary.json whose base cases measured the roof
  std::string census;  // --census PATH: the case `census` with census=PATH
  std::vector<std::string> sets;
  int nproc = 1, master_port = 0;  // a collective's ranks on this host
  bool smoke = false, list = false, markdown = false, inaccurate_ok = false;
};

// "64x48x32" -> {64, 48, 32}.
std::vector<std::int64_t> parse_shape(const std::string& text) {
  std::vector<std::int64_t> sizes;
  std::istringstream in(text);
  std::string part;
  while (std::getline(in, part, 'x')) {
    std::size_t used = 0;
    long long size = 0;
    try {
      size = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || size < 1)
      throw CommandError("--shape '" + text +
                         "': write the sizes as positive integers joined by x, e.g. 4096x4096x4096");
    sizes.push_back(size);
  }
  if (sizes.empty()) throw CommandError("--shape is empty: write e.g. 4096x4096x4096");
  return sizes;
}

// The roof the base cases of a run measured on `hardware`.
Roof roof_of_run(const std::string& path, const std::string& hardware) {
  Roof roof;
  try {
    roof = report::measured_roof(report::read_summary_file(path), hardware);
  } catch (const std::exception& e) {
    throw CommandError("--roof " + path + ": " + e.what());
  }
  if (roof.empty())
    throw CommandError("--roof " + path +
                       ": the run has no computation-* or main_memory-bandwidth base case that ran "
                       "ok on " +
                       (hardware.empty() ? std::string("this hardware") : hardware) +
                       " (run them first: xpuperf run with a base: section, e.g. plans/nvidia-base.yaml)");
  return roof;
}

int run_op_command(const GlobalOptions& global, const OpOptions& opts) {
  const Repo repo = find_repo(global);
  if (!opts.list && !launched_as_rank() && opts.nproc > 1)
    return spawn_local_ranks(opts.nproc, opts.master_port, global.argv);
  OperatorRequest request;
  request.list = opts.list;
  request.markdown = opts.markdown;
  if (opts.markdown && !opts.list) throw CommandError("--markdown goes with --list");
  if (!opts.list) {
    std::string name = opts.name;
    std::vector<std::string> sets = opts.sets;
    if (!opts.census.empty()) {
      if (!name.empty() && name != "census") throw CommandError("--census goes without --case (it is the case census)");
      name = "census";
      sets.push_back("census=" + opts.census);
    }
    if (name.empty()) throw CommandError("name an operator case: xpuperf op --case mm (or --list them)");
    Diagnostics diags;
    const auto overrides = parse_set_overrides(sets, diags);
    const auto config =
        diags.has_errors() ? std::nullopt : load_operation_config(repo, name, overrides, {"--case " + name, 0}, diags);
    if (!config) throw CommandError(diags.format());
    request.name = name;
    request.config = *config;
    for (const auto& s : opts.shapes) request.shapes.push_back(parse_shape(s));
    request.dtypes = opts.dtypes;
    request.smoke = opts.smoke;
    request.device = opts.device;
    request.json_out = opts.json_out;
    request.hardware = opts.hardware.empty() ? (opts.vendor == "cpu" ? "CPU" : "") : opts.hardware;
    request.vendor_spec = load_vendor_spec(repo, opts.vendor);
    request.datasheet_roof = datasheet_roof(chip_specs(repo, opts.vendor, request.hardware));
    request.inaccurate_ok = opts.inaccurate_ok;
    if (!opts.roof.empty()) request.measured_roof = roof_of_run(opts.roof, request.hardware);
    Diagnostics rank_diags;
    const auto env = read_rank_env(rank_diags);
    if (!env) throw CommandError(rank_diags.format());
    request.env = *env;
  }
  hand_over_to_torch(global.argv);  // the operators are LibTorch's
  if (!torch_entry()) throw CommandError(without_torch("run operator cases"));
  if (!torch_entry()->op)
    throw CommandError(
        "this build has no operator cases (the quickstart's, XPUPERF_CASES=quickstart): `make build` "
        "builds them");
  if (!opts.list && torch_entry()->activate_vendor) {
    try {
      torch_entry()->activate_vendor(request.vendor_spec);
    } catch (const std::exception& e) {
      throw CommandError(e.what());
    }
  }
  return torch_entry()->op(request, std::cout, std::cerr);
}

}  // namespace

void add_op_command(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "op", "Run one operator case: an operator's shapes × dtypes timed on the device and checked against float64");
  cmd->footer(
      "Operator cases live in cases/operation/<op>/config.yaml (shapes, dtypes, samples); their FLOP and byte "
      "formulas in cases/operation/README.md (`xpuperf op --list`). Each row: the device's time of one call "
      "(median, p10 – p90, CV; the inputs rotated through copies larger than the caches, which a fill empties "
      "before each call), the host's time to issue it, the first call's, TFLOP/s, GB/s, FLOP per byte, the error "
      "against float64 on the CPU (and the gradients'), whether two calls agree bitwise, and the fraction of the "
      "roofline the row reaches: the datasheet's (the vendor's specs.yaml) and, with --roof, the one this machine's "
      "base cases measured. The rows also go out as a PerfLog FINISHED line, which a plan's report reads.\nExit codes: "
      "0 every "
      "row ran and is accurate, 1 a row failed or is not accurate, 2 bad input.");
  auto opts = std::make_shared<OpOptions>();
  cmd->add_option("--case", opts->name, "The operator, e.g. mm, layer_norm, cross_entropy");
  cmd->add_flag("--list", opts->list, "List the operators: their shapes' sizes, FLOP and byte formulas");
  cmd->add_flag("--markdown", opts->markdown, "With --list: the table alone (cases/operation/README.md's)");
  cmd->add_option("--vendor", opts->vendor, "Vendor (its plug-in is loaded first)")->capture_default_str();
  cmd->add_option("--hardware", opts->hardware, "Chip name in the vendor's specs.yaml (default CPU for cpu)");
  cmd->add_option("--device", opts->device, "auto, cpu, or the vendor's device name")->capture_default_str();
  cmd->add_option("--shape", opts->shapes, "Instead of the config's shapes, e.g. --shape 4096x4096x4096 (repeatable)");
  cmd->add_option("--dtype", opts->dtypes, "Instead of the config's dtypes: fp32, bf16, fp16, fp64 (repeatable)");
  cmd->add_option("--set", opts->sets,
                  "Override a key of the case's config: --set samples=200, --set rotate_mib=0 (repeatable)");
  cmd->add_flag("--smoke", opts->smoke, "The config's smoke_shapes: tiny shapes that run in seconds on a CPU");
  cmd->add_option("--json", opts->json_out, "Also write the rows as JSON to this file");
  cmd->add_option("--roof", opts->roof,
                  "A run folder (or its summary.json) whose base cases (computation-*, main_memory-bandwidth) "
                  "measured this chip: each row's fraction of that roof beside the datasheet's");
  cmd->add_option("--census", opts->census,
                  "A case's step explained by its operators: each call of the census in this run folder, rank "
                  "log or census file (a training case's --set census_steps=N, an inference case's "
                  "census_batches=N) replayed alone and timed; then Σ calls × time against the measured step, the "
                  "calls that cost most and their roof fractions");
  cmd->add_option("--nproc", opts->nproc,
                  "Ranks on this host for a collective (all_reduce, all_gather, reduce_scatter, all_to_all); under "
                  "a launcher its RANK/WORLD_SIZE instead")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--master-port", opts->master_port, "Rendezvous port for the local ranks (default: a free one)");
  cmd->add_flag("--inaccurate-ok", opts->inaccurate_ok,
                "Exit 0 when every row ran, inaccurate ones too (a plan's rounds: the report gives the verdicts)");
  cmd->callback([&global, &exit_code, opts] { exit_code = run_op_command(global, *opts); });
}

}  // namespace xpuperf::cli
