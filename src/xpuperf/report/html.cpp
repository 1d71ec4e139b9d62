#include "xpuperf/report/html.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include "xpuperf/monitor/analysis.h"
#include "xpuperf/report/summary.h"

namespace xpuperf::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kWidth = 720, kHeight = 260, kLeft = 70, kRight = 160, kTop = 30, kBottom = 35;
const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                          "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string num(double v) {
  std::ostringstream out;
  const double a = std::fabs(v);
  if (a >= 1e9)
    out << std::setprecision(3) << v / 1e9 << "G";
  else if (a >= 1e6)
    out << std::setprecision(3) << v / 1e6 << "M";
  else if (a >= 1e4)
    out << std::setprecision(3) << v / 1e3 << "k";
  else
    out << std::setprecision(4) << v;
  return out.str();
}

// Every series of one metric in the monitor.csv files of a round folder.
std::map<std::string, std::vector<Series>> round_series(const fs::path& round_dir) {
  std::map<std::string, std::map<std::string, Series>> by_metric;
  std::error_code ec;
  for (const auto& node : fs::directory_iterator(round_dir, ec))
    monitor::for_each_monitor_row((node.path() / "monitor.csv").string(), [&](const monitor::MonitorRow& r) {
      if (r.device.rfind("cpu", 0) == 0 && r.device != "cpu") return;  // per core: too many lines
      Series& s = by_metric[r.metric][r.node + " " + r.device];
      s.label = r.node + " " + r.device;
      s.points.push_back({r.time, r.value});
    });
  std::map<std::string, std::vector<Series>> out;
  for (auto& [metric, series] : by_metric)
    for (auto& [label, s] : series) out[metric].push_back(std::move(s));
  return out;
}

}  // namespace

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string svg_line_chart(const std::string& title, const std::vector<Series>& series, const std::string& unit) {
  double t0 = 1e300, t1 = -1e300, v0 = 0, v1 = -1e300;
  for (const auto& s : series)
    for (const auto& [t, v] : s.points) {
      t0 = std::min(t0, t);
      t1 = std::max(t1, t);
      v0 = std::min(v0, v);
      v1 = std::max(v1, v);
    }
  std::ostringstream svg;
  svg << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" role=\"img\"><title>" << html_escape(title) << "</title>";
  svg << "<text x=\"" << kLeft << "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">" << html_escape(title)
      << "</text>";
  const int w = kWidth - kLeft - kRight, h = kHeight - kTop - kBottom;
  svg << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << w << "\" height=\"" << h
      << "\" fill=\"none\" stroke=\"#999\"/>";
  if (t1 <= t0 || v1 <= -1e299) {
    svg << "<text x=\"" << kLeft + 10 << "\" y=\"" << kTop + h / 2 << "\">no samples</text></svg>";
    return svg.str();
  }
  if (v1 <= v0) v1 = v0 + 1;
  svg << "<text x=\"" << kLeft - 5 << "\" y=\"" << kTop + 10 << "\" text-anchor=\"end\" font-size=\"11\">" << num(v1)
      << "</text><text x=\"" << kLeft - 5 << "\" y=\"" << kTop + h << "\" text-anchor=\"end\" font-size=\"11\">"
      << num(v0) << "</text><text x=\"" << kLeft - 5 << "\" y=\"" << kTop + h / 2
      << "\" text-anchor=\"end\" font-size=\"11\">" << html_escape(unit) << "</text>";
  svg << "<text x=\"" << kLeft << "\" y=\"" << kHeight - 10 << "\" font-size=\"11\">0 s</text><text x=\"" << kLeft + w
      << "\" y=\"" << kHeight - 10 << "\" text-anchor=\"end\" font-size=\"11\">" << num(t1 - t0) << " s</text>";
  for (std::size_t i = 0; i < series.size(); ++i) {
    const auto& s = series[i];
    const char* colour = kColours[i % 10];
    // At most ~600 points a line: every k-th sample.
    const std::size_t step = std::max<std::size_t>(1, s.points.size() / 600);
    svg << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.5\" points=\"";
    for (std::size_t k = 0; k < s.points.size(); k += step) {
      const double x = kLeft + (s.points[k].first - t0) / (t1 - t0) * w;
      const double y = kTop + h - (s.points[k].second - v0) / (v1 - v0) * h;
      svg << std::fixed << std::setprecision(1) << x << "," << y << " ";
    }
    svg << "\"/>";
    svg << "<text x=\"" << kLeft + w + 8 << "\" y=\"" << kTop + 12 + 14 * static_cast<int>(i)
        << "\" font-size=\"11\" fill=\"" << colour << "\">" << html_escape(s.label) << "</text>";
  }
  svg << "</svg>";
  return svg.str();
}

std::string svg_bar_chart(const std::string& title, const std::vector<std::pair<std::string, double>>& bars,
                          const std::string& unit) {
  double top = 0;
  for (const auto& b : bars) top = std::max(top, b.second);
  if (top <= 0) top = 1;
  const int w = kWidth - kLeft - kRight, h = kHeight - kTop - kBottom;
  std::ostringstream svg;
  svg << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" role=\"img\"><title>" << html_escape(title) << "</title>";
  svg << "<text x=\"" << kLeft << "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">" << html_escape(title)
      << "</text>";
  svg << "<text x=\"" << kLeft - 5 << "\" y=\"" << kTop + 10 << "\" text-anchor=\"end\" font-size=\"11\">" << num(top)
      << "</text><text x=\"" << kLeft - 5 << "\" y=\"" << kTop + h / 2 << "\" text-anchor=\"end\" font-size=\"11\">"
      << html_escape(unit) << "</text>";
  const double slot = bars.empty() ? w : static_cast<double>(w) / static_cast<double>(bars.size());
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const double bh = bars[i].second / top * h;
    const double x = kLeft + slot * static_cast<double>(i) + slot * 0.15;
    svg << std::fixed << std::setprecision(1) << "<rect x=\"" << x << "\" y=\"" << kTop + h - bh << "\" width=\""
        << slot * 0.7 << "\" height=\"" << bh << "\" fill=\"" << kColours[0] << "\"><title>"
        << html_escape(bars[i].first) << ": " << num(bars[i].second) << "</title></rect>";
    svg << "<text x=\"" << x + slot * 0.35 << "\" y=\"" << kHeight - 18 << "\" text-anchor=\"middle\" font-size=\"11\">"
        << html_escape(bars[i].first) << "</text>";
  }
  svg << "</svg>";
  return svg.str();
}

// A base case's headline in the summary table: "median 0.283 TFLOP/s" (empty for training cases).
std::string base_figure(const json& c, const std::string& median) {
  if (c.value("family", "") != "base" || median.empty()) return "";
  for (const auto& r : c["rounds"])
    if (r.contains("unit"))
      return html_escape(r.value("figure", "") + " " + median + " " + r["unit"].get<std::string>());
  return "";
}

std::string report_html(const json& summary, const std::string& run_dir) {
  std::ostringstream page;
  const std::string name = summary.value("run", "run");
  page << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>xpuperf " << html_escape(name)
       << "</title><style>body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
          ".chart{display:block;margin:1em 0}</style></head><body>\n";
  page << "<h1>xpuperf " << html_escape(name) << "</h1>\n<p>Vendor " << html_escape(summary["plan"].value("vendor", ""))
       << ", launcher " << html_escape(summary["plan"].value("launcher", ""));
  if (summary.contains("system"))
    page << "; " << html_escape(summary["system"].value("cpu_model", "")) << ", "
         << summary["system"].value("cpu_cores", 0) << " cores, " << html_escape(summary["system"].value("os", ""));
  page << ".</p>\n<h2>Summary</h2>\n<table><tr><th>case</th><th>rounds ok / run</th><th>converged</th>"
          "<th>samples/s mean</th><th>std</th><th>CV</th><th>final metric (median)</th><th>e2e s (median)</th>"
          "<th>energy (J, mean)</th></tr>\n";
  for (const auto& c : summary["cases"]) {
    const json& a = c["aggregate"];
    auto stat = [&a](const char* key, const char* field, int digits) -> std::string {
      if (!a.contains(key)) return "";
      std::ostringstream out;
      out << std::fixed << std::setprecision(digits) << a[key][field].get<double>();
      return out.str();
    };
    page << "<tr><td>" << html_escape(c["case"].get<std::string>()) << "</td><td>" << a["rounds_used"].get<int>()
         << " / " << c["rounds"].size() << "</td><td>" << a["rounds_converged"].get<int>() << "</td><td>"
         << stat("training_samples_per_second", "mean", 1) << "</td><td>"
         << stat("training_samples_per_second", "std", 1) << "</td><td>" << stat("training_samples_per_second", "cv", 4)
         << "</td><td>" << html_escape(a.value("final_metric_name", "")) << " " << stat("final_metric", "median", 4)
         << base_figure(c, stat("value", "median", 3)) << "</td><td>" << stat("e2e_time", "median", 1) << "</td><td>"
         << stat("energy_j", "mean", 1) << "</td></tr>\n";
  }
  page << "</table>\n";
  for (const auto& c : summary["cases"]) {
    const std::string key = c["case"].get<std::string>();
    page << "<h2>" << html_escape(key) << "</h2>\n";
    std::vector<std::pair<std::string, double>> bars;
    const bool base = c.value("family", "") == "base";
    const bool inference = c.value("family", "") == "inference";
    std::string bar_unit = inference ? "inference_core, items/s" : "samples/s";
    for (const auto& r : c["rounds"]) {
      bars.push_back(
          {"round " + std::to_string(r["round"].get<int>()), r.value(base        ? "value"
                                                                     : inference ? "inference_core"
                                                                                 : "training_samples_per_second",
                                                                     0.0)});
      if (base && r.contains("unit")) bar_unit = r.value("figure", "") + ", " + r["unit"].get<std::string>();
    }
    page << svg_bar_chart(base ? "Headline figure per round" : "Throughput per round", bars, bar_unit) << "\n";
    for (const auto& f : c["failed_rounds"])
      page << "<p>Round " << f["round"].get<int>() << ": " << html_escape(f["status"].get<std::string>()) << " ("
           << html_escape(f["reason"].get<std::string>()) << ")</p>\n";
    // The monitors of the first round that has them.
    std::string dir_name = c.value("dir", key);
    std::replace(dir_name.begin(), dir_name.end(), ':', '_');
    for (const auto& r : c["rounds"]) {
      const auto series =
          round_series(fs::path(run_dir) / dir_name / ("round" + std::to_string(r["round"].get<int>())));
      if (series.empty()) continue;
      page << "<h3>Monitors, round " << r["round"].get<int>() << "</h3>\n";
      const std::vector<std::pair<std::string, std::string>> charts = {
          {"power_w", "W"}, {"util_percent", "%"}, {"mem_used_bytes", "bytes"}, {"temperature_c", "°C"}};
      for (const auto& [metric, unit] : charts)
        if (series.count(metric)) page << svg_line_chart(metric, series.at(metric), unit) << "\n";
      break;
    }
  }
  page << "<p><small>Written by xpuperf " << html_escape(summary.value("xpuperf_version", ""))
       << " from the run folder; summary.json has every figure.</small></p>\n</body></html>\n";
  return page.str();
}

}  // namespace xpuperf::report
