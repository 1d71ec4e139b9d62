// `xpuperf infer`: one inference case through seed 004's seven steps (src/xpuperf/infer/).

#include <filesystem>
#include <iostream>

#include "xpuperf/cli/commands.h"
#include "xpuperf/core/inference_config.h"
#include "xpuperf/core/plan.h"
#include "xpuperf/core/training_config.h"
#ifdef XPUPERF_HAVE_TORCH
#include "xpuperf/infer/entry.h"
#endif

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

// The chip's datasheet peak (TFLOP/s) at the case's precision, for MFU; 0 when not listed.
double chip_peak(const Repo& repo, const std::string& vendor, const std::string& hardware, bool fp16) {
  Diagnostics ignored;
  const auto specs = load_config_file(repo.vendor_dir(vendor) + "/specs.yaml", ignored);
  if (!specs || !specs->has("chips") || hardware.empty()) return 0;
  const YAML::Node chip = specs->at("chips").value[hardware];
  if (!chip || !chip.IsMap() || !chip["peak_tflops"] || !chip["peak_tflops"].IsMap()) return 0;
  const YAML::Node peak = chip["peak_tflops"][fp16 ? "fp16" : "fp32"];
  return peak && peak.IsScalar() ? peak.as<double>(0.0) : 0.0;
}

int run_infer(const GlobalOptions& global, InferOptions opts) {
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
    for (const auto& text : opts.sets)
      if (auto o = parse_set_override(text, diags)) overrides.push_back(*o);
    for (const auto& o : overrides)
      if (check_against_base(defaults, o.key, o.value, o.source, o.source.file, diags))
        config->set(o.key, o.value, o.source);
  }
  std::cerr << diags.format(Severity::Warning);
  if (!config || diags.has_errors()) return 1;
#ifndef XPUPERF_HAVE_TORCH
  throw CommandError(
      "this xpuperf was built without LibTorch, so it cannot run inference cases: install "
      "libtorch-dev (scripts/install-deps.sh does) and rebuild");
#else
  std::error_code ec;
  std::filesystem::create_directories(opts.out, ec);
  if (ec) throw CommandError("--out " + opts.out + ": cannot create it: " + ec.message());
  infer::InferRequest request{
      opts.name,
      opts.framework,
      opts.vendor,
      *config,
      chip_peak(repo, opts.vendor, opts.hardware.empty() && opts.vendor == "cpu" ? "CPU" : opts.hardware,
                config->get_bool("fp16")),
      opts.out};
  return infer::run_inference(request, std::cout, std::cerr);
#endif
}

}  // namespace

void add_infer_command(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd =
      app.add_subcommand("infer", "Run one inference case through seed 004's seven steps and print its figures");
  cmd->footer(
      "Config: cases/inference/<case>/{configurations,parameters}.yaml < vendors/<v>/inference/"
      "<case>_configurations.yaml < --data-dir, --set. The switches compiler, no_validation, exist_onnx_path and "
      "exist_compiler_path choose which steps run (README, Inference).\nExit codes: 0 done, 1 bad input or failure, 3 "
      "case not built into this binary.");
  auto opts = std::make_shared<InferOptions>();
  cmd->add_option("--case", opts->name, "Inference case, e.g. lenet5 or lenet5:libtorch")->required();
  cmd->add_option("--framework", opts->framework, "Framework of the case")->capture_default_str();
  cmd->add_option("--vendor", opts->vendor, "Vendor whose config to use")->capture_default_str();
  cmd->add_option("--hardware", opts->hardware, "Chip in the vendor's specs.yaml, for MFU (default CPU for cpu)");
  cmd->add_option("--data-dir", opts->data_dir, "Data folder of the case");
  cmd->add_option("--out", opts->out, "Folder for exported models")->capture_default_str();
  cmd->add_option("--set", opts->sets, "Override a parameter: --set key=value (repeatable)");
  cmd->callback([&global, &exit_code, opts] { exit_code = run_infer(global, *opts); });
}

}  // namespace xpuperf::cli
