// `xpuperf sweep CASE`: one training case under several strategies, Rapidformer's table.

#include <filesystem>

#include "xpuperf/cli/commands.h"
#include "xpuperf/launch/sweep.h"

namespace xpuperf::cli {

void add_sweep_command(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "sweep", "Run one training case under several strategies (precision, ZeRO, checkpointing, ...) and tabulate");
  cmd->footer(
      "Each strategy is switches joined by +: fp32 tf32 bf16 fp16, zero1 zero2 zero3, tp2 (tensor parallel), pp2\n"
      "(pipeline), ckpt, graphs, offload, fused foreach, lora8, moe8 (experts), ep2 (expert parallel), or any\n"
      "key=value of the case's config; strategies are separated by ;. Each runs --warmup-steps + --steps steps,\n"
      "--repeats times, as rounds of `xpuperf run` (monitors, result tree) under <log-dir>/sweep<stamp>/rows/.\n"
      "The table (summary.md, summary.json, report.html) gives samples/s mean ± std over the repeats (warm-up\n"
      "excluded), tokens/s, MFU, peak device memory per GPU, energy per sample, speed-up and memory against the\n"
      "first row, and loss parity: every row's loss at every step within --loss-tolerance of the first row's.\n"
      "Example: xpuperf sweep gpt2 --vendor nvidia --hardware H200x1x2 --data-dir data/text \\\n"
      "           --strategies \"fp32; bf16; bf16+zero1; bf16+zero2; bf16+ckpt\"\n"
      "Exit codes: 0 every row ran within parity, 1 a row failed or broke parity, 2 the sweep cannot start, 130 "
      "interrupted.");
  auto options = std::make_shared<SweepOptions>();
  cmd->add_option("case", options->model, "Model of the training case, e.g. gpt2")->required();
  add_case_options(cmd,
                   {&options->framework, &options->vendor, &options->data_dir, &options->sets,
                    "Override a parameter in every row: --set key=value (repeatable)"},
                   /*required=*/true);
  cmd->add_option("--hardware", options->hardware, "HWxNODESxPROCS of the vendor config, e.g. H200x1x2")->required();
  cmd->add_option("--strategies", options->strategies, "Strategies separated by ;, e.g. \"fp32; bf16; bf16+zero2\"")
      ->required();
  cmd->add_option("--steps", options->steps, "Timed steps a repeat")->capture_default_str();
  cmd->add_option("--warmup-steps", options->warmup_steps, "Untimed steps before them")->capture_default_str();
  cmd->add_option("--repeats", options->repeats, "Rounds a strategy")->capture_default_str();
  cmd->add_option("--loss-tolerance", options->loss_tolerance,
                  "Largest relative difference of a row's loss from the first row's at any step")
      ->capture_default_str();
  cmd->add_option("--log-dir", options->log_dir, "Where the sweep folder goes")->capture_default_str();
  cmd->add_option("--master-port", options->master_port,
                  "Rendezvous port of the ranks (default: a free port each round)");
  cmd->callback([&global, &exit_code, options] {
    options->xpuperf = std::filesystem::read_symlink("/proc/self/exe").string();
    exit_code = run_sweep(find_repo(global), *options);
  });
}

}  // namespace xpuperf::cli
