// `xpuperf infer`: one inference case through the seven steps of FlagPerf's inference framework (src/xpuperf/infer/).

#include <filesystem>
#include <iostream>

#include "xpuperf/cli/commands.h"
#include "xpuperf/cli/torch_entry.h"
#include "xpuperf/core/inference_config.h"
#include "xpuperf/core/plan.h"
#include "xpuperf/core/specs.h"
#include "xpuperf/core/training_config.h"

namespace xpuperf::cli {

namespace {

struct InferOptions {
  std::string name;
  std::string framework = "libtorch";
  std::string vendor = "cpu";
  std::string hardware;
  std::string data_dir;
  std::string out = "results/export";
  std::vector<std::string> sets;
};

int run_infer(const GlobalOptions& global, InferOptions opts) {
  hand_over_to_torch(global.argv);  // inference runs in xpuperf-torch
  const Repo repo = find_repo(global);
  if (const auto colon = opts.name.find(':'); colon != std::string::npos) {
    opts.framework = opts.name.substr(colon + 1);
    opts.name = opts.name.substr(0, colon);
  }
  Diagnostics diags;
  auto config = load_inference_config(repo, opts.name, opts.vendor, {"--case", 0}, plan_keys(), diags);
  if (config) {
    const Config defaults = *config;
    std::vector<Override> overrides;
    if (!opts.data_dir.empty()) overrides.push_back({"data_dir", string_node(opts.data_dir), {"--data-dir", 0}});
    for (auto& o : parse_set_overrides(opts.sets, diags)) overrides.push_back(std::move(o));
    for (const auto& o : overrides)
      if (check_against_base(defaults, o.key, o.value, o.source, o.source.file, diags))
        config->set(o.key, o.value, o.source);
  }
  std::cerr << diags.format(Severity::Warning);
  if (!config || diags.has_errors()) return 1;
  if (!torch_entry()) throw CommandError(without_torch("run inference cases"));
  if (!torch_entry()->infer)
    throw CommandError(
        "this xpuperf was built with the quickstart's cases only (XPUPERF_CASES=quickstart, what `make run` builds "
        "first): `make build` adds the inference pipeline and every case",
        3);
  std::error_code ec;
  std::filesystem::create_directories(opts.out, ec);
  if (ec) throw CommandError("--out " + opts.out + ": cannot create it: " + ec.message());
  // The chip's datasheet peak at the case's precision, for MFU (0: not listed).
  const std::string hardware = opts.hardware.empty() && opts.vendor == "cpu" ? "CPU" : opts.hardware;
  const double peak = chip_figure(chip_specs(repo, opts.vendor, hardware),
                                  config->get_bool("fp16") ? "peak_tflops.fp16" : "peak_tflops.fp32");
  InferenceRequest request{
      opts.name, opts.framework, opts.vendor, *config, peak, opts.out, load_vendor_spec(repo, opts.vendor)};
  return torch_entry()->infer(request, std::cout, std::cerr);
}

}  // namespace

void add_infer_command(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "infer", "Run one inference case through FlagPerf's seven inference steps and print its figures");
  cmd->footer(
      "Config: cases/inference/<case>/{configurations,parameters}.yaml < vendors/<v>/inference/"
      "<case>_configurations.yaml < --data-dir, --set. The switches compiler, no_validation, exist_onnx_path and "
      "exist_compiler_path choose which steps run (docs/INFERENCE.md).\nExit codes: 0 done, 1 bad input or failure, 3 "
      "case not built into this binary.");
  auto opts = std::make_shared<InferOptions>();
  cmd->add_option("--case", opts->name, "Inference case, e.g. lenet5 or lenet5:libtorch")->required();
  add_case_options(cmd, {&opts->framework, &opts->vendor, &opts->data_dir, &opts->sets});
  cmd->add_option("--hardware", opts->hardware, "Chip in the vendor's specs.yaml, for MFU (default CPU for cpu)");
  cmd->add_option("--out", opts->out, "Folder for exported models")->capture_default_str();
  cmd->callback([&global, &exit_code, opts] { exit_code = run_infer(global, *opts); });
}

}  // namespace xpuperf::cli
