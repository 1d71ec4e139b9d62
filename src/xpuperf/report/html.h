#pragma once
// report.html: one self-contained page (no network, no scripts) that shows what people look at:
// per family a table of the figures; for training the time-to-train picture (the eval metric
// against step and wall time with the target and the moment it was reached), loss and
// throughput over the run; for base cases the figure against the datasheet; for inference the
// latency percentiles per batch size; the accelerators' power, utilisation and memory over time
// per device and the energy per round. Drawn from summary.json and the rounds' monitor.csv.

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "xpuperf/report/chart.h"
#include "xpuperf/report/compare.h"
#include "xpuperf/report/summary_model.h"

namespace xpuperf::report {

// The page for a run folder whose summary is `summary` (build_summary).
std::string report_html(const Summary& summary, const std::string& run_dir);

// `xpuperf compare A B --html FILE`: the two runs side by side, the verdict of each figure, and
// per training case both runs' curves on the same axes.
std::string compare_html(const Summary& a, const Summary& b, const std::string& run_a, const std::string& run_b,
                         const std::vector<FigureComparison>& rows, double fail_percent);

// The page's head and style, shared by the pages xpuperf writes (report, compare, sweep).
void html_page_start(std::ostringstream& page, const std::string& title);

}  // namespace xpuperf::report
