#pragma once
// report.html: one self-contained page (no network, no scripts) with the summary table,
// throughput per round and the monitor time series, drawn as inline SVG.

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace xpuperf::report {

struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (time, value)
};

// A line chart of several series over time; `unit` labels the y axis.
std::string svg_line_chart(const std::string& title, const std::vector<Series>& series, const std::string& unit);
// A bar chart, one bar a (label, value).
std::string svg_bar_chart(const std::string& title, const std::vector<std::pair<std::string, double>>& bars,
                          const std::string& unit);

// The page for a run folder whose summary is `summary` (build_summary).
std::string report_html(const nlohmann::json& summary, const std::string& run_dir);

std::string html_escape(const std::string& text);

}  // namespace xpuperf::report
