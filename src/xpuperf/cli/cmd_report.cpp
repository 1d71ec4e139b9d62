// `xpuperf report RUN_DIR`: rebuild a run's report files from its result tree, or (--from-json)
// rewrite summary.md, summary.csv and report.html from its stored summary.json.

#include <iostream>

#include "xpuperf/cli/commands.h"
#include "xpuperf/report/summary_writers.h"

namespace xpuperf::cli {

void add_report_command(CLI::App& app, const GlobalOptions&, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "report", "Rebuild summary.json, summary.md, summary.csv and report.html from a run folder alone");
  auto run_dir = std::make_shared<std::string>();
  auto from_json = std::make_shared<bool>(false);
  cmd->add_option("run_dir", *run_dir, "A run folder, <log_dir>/run<YYYYmmddHHMMSS>")->required();
  cmd->add_flag("--from-json", *from_json,
                "Keep summary.json and rewrite the other files from it (a run whose rank logs were pruned, or a "
                "summary.json copied from another machine)");
  cmd->callback([&exit_code, run_dir, from_json] {
    try {
      if (*from_json)
        std::cout << report::rewrite_from_stored_summary(*run_dir) << "\nWrote " << *run_dir
                  << "/summary.md, summary.csv and report.html from its summary.json\n";
      else
        std::cout << report::write_summary(*run_dir) << "\nWrote " << *run_dir
                  << "/summary.json, summary.md, summary.csv and report.html\n";
      exit_code = 0;
    } catch (const std::runtime_error& e) {
      throw CommandError(e.what());
    }
  });
}

}  // namespace xpuperf::cli
