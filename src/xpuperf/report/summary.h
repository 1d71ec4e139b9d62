#pragma once
// summary.json and summary.md, rebuilt from a run's result tree alone: PerfLog lines of the rank
// logs, monitor.csv, round_status.json where the controller wrote one. `xpuperf run` calls the
// same code at its end, and `xpuperf report RUN_DIR` reruns it.

#include <set>
#include <string>
#include <vector>

#include "xpuperf/report/summary_model.h"

namespace xpuperf::report {

// Reads the run folder into the result model; throws std::runtime_error when it is not one (no
// plan.yaml, and no FlagPerf <case>/round<N> folders).
Summary build_summary(const std::string& run_dir);
// The accelerators a round is charged for, from the node folders of its monitor.csv files: the
// `devices` each node agent that shared its host listed in node_status.json, else gpu0 …
// gpu<nproc-1> (monitor::accelerators_of_round).
std::set<std::string> accelerators_charged(const std::vector<std::string>& monitor_files, int nproc);
std::string summary_markdown(const Summary& summary);

// What summary.md and report.html both write of a case:
// "3 / 5": rounds used in the statistics over rounds run.
std::string rounds_ok_text(const CaseResult& c);
// "mean ± std" of one figure's aggregate, or "mean (n = 1)" for a single round: no spread to show.
std::string mean_and_spread(const Aggregate& a, int digits);
// Whether the case's rounds ran on synthetic inputs (their `data` says so): no accuracy to claim.
bool uses_synthetic_data(const CaseResult& c);

}  // namespace xpuperf::report
