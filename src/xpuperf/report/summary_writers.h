#pragma once
// The run's report files, each written from the result model (summary_model.h) by one writer, as
// google/benchmark's reporters do: summary.json (the stored form), summary.md, summary.csv,
// report.html and, for a run with operator cases, operators.csv. A new format is a new writer here, never another walk
// of the result tree.

#include <memory>
#include <string>
#include <vector>

#include "xpuperf/report/summary_model.h"

namespace xpuperf::report {

class SummaryWriter {
 public:
  virtual ~SummaryWriter() = default;
  virtual const char* file_name() const = 0;  // in the run folder
  virtual std::string write(const Summary& summary) const = 0;
  // Whether the run has what the file holds (operators.csv: an operator case); false: not written.
  virtual bool applies(const Summary& summary) const {
    (void)summary;
    return true;
  }
};

// The writers of a run folder's report files, summary.json first. report.html reads the rounds'
// monitor.csv files from `run_dir` besides the summary.
std::vector<std::unique_ptr<SummaryWriter>> summary_writers(const std::string& run_dir);

// Builds the summary from the run folder (build_summary), writes every writer's file into it and
// returns the Markdown. `summary_out`, when given, receives the summary written.
std::string write_summary(const std::string& run_dir, Summary* summary_out = nullptr);

// summary.md, summary.csv and report.html again from the run folder's stored summary.json, read
// through the model (for a run whose rank logs were pruned, or a summary.json copied from elsewhere);
// returns the Markdown. Throws SummaryError naming the file and key when it does not read.
std::string rewrite_from_stored_summary(const std::string& run_dir);

}  // namespace xpuperf::report
