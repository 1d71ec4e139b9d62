#pragma once
// The run history: every run's rounds in a SQLite database, so results can be listed and
// compared across runs. Default: $XPUPERF_HISTORY, else $XDG_DATA_HOME/xpuperf/history.db,
// else ~/.local/share/xpuperf/history.db; a plan may name another (history_db).

#include <stdexcept>
#include <string>
#include <vector>

#include "xpuperf/report/summary_model.h"

namespace xpuperf::report {

class HistoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string default_history_path();

// Adds (or replaces, for the same run folder) a run and its rounds. Throws HistoryError.
void record_run(const std::string& db_path, const Summary& summary, const std::string& run_dir);

struct HistoryRow {
  std::string run, run_dir, vendor, case_key;
  int rounds = 0, rounds_ok = 0, rounds_converged = 0;
  double mean_samples_per_second = 0;
};

// Runs and cases, oldest first; `case_filter` keeps case keys that start with it.
std::vector<HistoryRow> list_history(const std::string& db_path, const std::string& case_filter = "");

}  // namespace xpuperf::report
