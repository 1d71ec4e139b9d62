// `xpuperf report RUN_DIR`: rebuild summary.json and summary.md from a run's result tree.

#include <iostream>

#include "xpuperf/cli/commands.h"
#include "xpuperf/report/summary.h"

namespace xpuperf::cli {

void add_report_command(CLI::App& app, const GlobalOptions&, int& exit_code) {
  auto* cmd = app.add_subcommand("report", "Rebuild summary.json and summary.md from a run folder alone");
  auto run_dir = std::make_shared<std::string>();
  cmd->add_option("run_dir", *run_dir, "A run folder, <log_dir>/run<YYYYmmddHHMMSS>")->required();
  cmd->callback([&exit_code, run_dir] {
    try {
      std::cout << report::write_summary(*run_dir) << "\nWrote " << *run_dir << "/summary.json and summary.md\n";
      exit_code = 0;
    } catch (const std::runtime_error& e) {
      throw CommandError(e.what());
    }
  });
}

}  // namespace xpuperf::cli
