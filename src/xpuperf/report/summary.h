#pragma once
// summary.json and summary.md, rebuilt from a run's result tree alone: PerfLog lines of the rank
// logs, monitor.csv, round_status.json where the controller wrote one. `xpuperf run` calls the
// same code at its end, and `xpuperf report RUN_DIR` reruns it.

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace xpuperf::report {

inline constexpr const char* kSummarySchema = "xpuperf.summary/1";

// Reads the run folder; throws std::runtime_error when it is not one (no plan.yaml).
nlohmann::json build_summary(const std::string& run_dir);
// The accelerators a round is charged for, from the node folders of its monitor.csv files: the
// `devices` each node agent that shared its host listed in node_status.json, else gpu0 …
// gpu<nproc-1> (monitor::accelerators_of_round).
std::set<std::string> accelerators_charged(const std::vector<std::string>& monitor_files, int nproc);
std::string summary_markdown(const nlohmann::json& summary);
// The round figures the statistics are taken over (a case's "aggregate"), which summary.csv lists too.
const std::vector<const char*>& aggregated_figures();

// What summary.md and report.html both write of a case entry:
// "3 / 5": rounds used in the statistics over rounds run.
std::string rounds_ok_text(const nlohmann::json& case_entry);
// "mean ± std" of one figure's aggregate, or "mean (n = 1)" for a single round: no spread to show.
std::string mean_and_spread(const nlohmann::json& aggregate, int digits);
// Whether the case's rounds ran on synthetic inputs (their `data` says so): no accuracy to claim.
bool uses_synthetic_data(const nlohmann::json& case_entry);

// Writes summary.json, summary.md, summary.csv (summary_csv.h) and report.html into the run folder and returns the
// Markdown. `summary_out`, when given, receives the summary written.
std::string write_summary(const std::string& run_dir, nlohmann::json* summary_out = nullptr);

}  // namespace xpuperf::report
