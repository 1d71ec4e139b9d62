// `xpuperf run PLAN`: run a plan's cases round by round and report.

#include <filesystem>

#include "xpuperf/cli/commands.h"
#include "xpuperf/launch/run_plan.h"

namespace xpuperf::cli {

void add_run_command(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd = app.add_subcommand("run", "Run a plan: check, prepare, run every round of every case, report");
  cmd->footer(
      "Results go to <log_dir>/run<YYYYmmddHHMMSS>/. Ctrl-C stops the round in progress and keeps what\n"
      "was measured; --resume finishes such a run.\n"
      "Exit codes: 0 every round ok, 1 a round failed or timed out, 2 the plan cannot run, 130 interrupted.");
  auto options = std::make_shared<RunOptions>();
  auto* plan = cmd->add_option("plan", options->plan_path, "Plan file (YAML), e.g. plans/quickstart.yaml");
  auto* resume =
      cmd->add_option("--resume", options->resume_dir, "Finish an interrupted run folder, skipping finished rounds");
  plan->excludes(resume);
  cmd->add_flag("--dry-run", options->dry_run,
                "Check the plan, then print every command the run would start on every host (node agents, "
                "containers, ranks) without starting any");
  cmd->callback([&global, &exit_code, options] {
    if (options->plan_path.empty() && options->resume_dir.empty())
      throw CommandError("give a plan (xpuperf run plans/quickstart.yaml) or --resume RUN_DIR");
    options->xpuperf = std::filesystem::read_symlink("/proc/self/exe").string();
    const std::string near = options->resume_dir.empty() ? options->plan_path : "";
    exit_code = run_plan(find_repo(global, near), *options);
  });
}

}  // namespace xpuperf::cli
