// `xpuperf history`: the runs recorded in the history database; `--add RUN_DIR` records a run from
// its stored summary.json (a run made with history_db: none, or on another machine).

#include <iomanip>
#include <iostream>

#include "xpuperf/cli/commands.h"
#include "xpuperf/report/history.h"
#include "xpuperf/report/summary_model.h"

namespace xpuperf::cli {

void add_history_command(CLI::App& app, const GlobalOptions&, int& exit_code) {
  auto* cmd = app.add_subcommand("history", "List the recorded runs: per run and case, rounds and mean samples/s");
  auto case_filter = std::make_shared<std::string>();
  auto db = std::make_shared<std::string>(report::default_history_path());
  cmd->add_option("--case", *case_filter, "Only case keys starting with this, e.g. lenet5:libtorch:CPU");
  auto add = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--db", *db, "History database")->capture_default_str();
  cmd->add_option("--add", *add,
                  "Record these run folders from their summary.json first (runs made with history_db: none, or "
                  "copied from another machine); a run already recorded is replaced");
  cmd->callback([&exit_code, case_filter, db, add] {
    try {
      for (const auto& run_dir : *add) {
        report::record_run(*db, report::read_summary_file(run_dir), run_dir);
        std::cout << "Recorded " << run_dir << " in " << *db << "\n";
      }
      const auto rows = report::list_history(*db, *case_filter);
      if (rows.empty()) {
        std::cout << "No runs recorded in " << *db << (case_filter->empty() ? "" : " for " + *case_filter) << ".\n";
      } else {
        std::cout << "| run | vendor | case | rounds ok / run | converged | samples/s (mean) | folder |\n"
                  << "| --- | --- | --- | ---: | ---: | ---: | --- |\n";
        for (const auto& r : rows)
          std::cout << "| " << r.run << " | " << r.vendor << " | " << r.case_key << " | " << r.rounds_ok << " / "
                    << r.rounds << " | " << r.rounds_converged << " | " << std::fixed << std::setprecision(1)
                    << r.mean_samples_per_second << " | " << r.run_dir << " |\n";
      }
      exit_code = 0;
    } catch (const report::HistoryError& e) {
      throw CommandError(e.what());
    } catch (const report::SummaryError& e) {
      throw CommandError(e.what());
    }
  });
}

}  // namespace xpuperf::cli
