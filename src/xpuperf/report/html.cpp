#include "xpuperf/report/html.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>

#include "xpuperf/monitor/analysis.h"
#include "xpuperf/report/chart.h"
#include "xpuperf/report/curves.h"
#include "xpuperf/report/operator_html.h"
#include "xpuperf/report/serving_report.h"
#include "xpuperf/report/stats.h"
#include "xpuperf/report/summary.h"

namespace xpuperf::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// At most this many lines in one monitor chart; beyond it only the first round is drawn.
constexpr std::size_t kMaxMonitorLines = 8;
// A series of fewer samples says nothing over time (a base case of a second at 1 Hz).
constexpr std::size_t kMinMonitorSamples = 3;

// A figure's median over the ok rounds; "" when no ok round measured it.
std::string median_of(const CaseResult& c, const char* figure, int digits) {
  const Aggregate* a = c.stat(figure);
  return a ? fixed_digits(a->median, digits) : "";
}

}  // namespace

void html_page_start(std::ostringstream& page, const std::string& title) {
  page << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << html_escape(title)
       << "</title><style>body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}"
          "table{border-collapse:collapse;margin:.5em 0;font-size:14px}"
          "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
          "td:first-child,th:first-child,td.text,th.text{text-align:left}th{background:#f4f4f4}.note{color:#555}"
          ".bad{color:#b00020}.good{color:#1b7a1b}h2{margin-top:1.6em;border-bottom:1px solid #ddd}"
       << chart_css() << "</style></head><body>\n";
}

namespace {

void system_line(std::ostringstream& page, const Summary& summary) {
  page << "<p>Vendor " << html_escape(summary.vendor) << ", launcher " << html_escape(summary.launcher);
  if (summary.system.is_object())
    page << "; " << html_escape(summary.system.value("cpu_model", "")) << ", " << summary.system.value("cpu_cores", 0)
         << " cores, " << html_escape(summary.system.value("os", ""));
  page << ".</p>\n";
}

// A table row's first cells, alike in every family's table: the case and its rounds used / run.
void case_cells(std::ostringstream& page, const CaseResult& c) {
  page << "<tr><td>" << html_escape(c.key) << "</td><td>" << rounds_ok_text(c) << "</td>";
}

void failed_rounds(std::ostringstream& page, const CaseResult& c) {
  for (const auto& r : c.rounds)
    if (!r.ok())
      page << "<p class=\"bad\">Round " << r.number << ": " << html_escape(r.status) << " (" << html_escape(r.reason)
           << ")</p>\n";
}

// ---- training ----------------------------------------------------------------------------------

void training_table(std::ostringstream& page, const Summary& summary) {
  page << "<table><tr><th>case</th><th>rounds ok / run</th><th>converged</th><th>samples/s</th><th>CV</th>"
          "<th>95% CI</th><th>final metric (median)</th><th>time to target, s (median)</th><th>e2e s (median)</th>"
          "<th>energy / sample, J</th></tr>\n";
  for (const auto& c : summary.cases) {
    if (!c.is(CaseFamilyKind::Training)) continue;
    case_cells(page, c);
    page << "<td>" << c.rounds_converged << "</td>";
    if (const Aggregate* t = c.stat("training_samples_per_second")) {
      const bool one = t->n < 2;
      page << "<td>" << mean_and_spread(*t, 1) << "</td><td>" << (one ? "–" : fixed_digits(100 * t->cv, 2) + " %")
           << "</td><td>" << (one ? "n = 1" : fixed_digits(t->ci95_low, 1) + " – " + fixed_digits(t->ci95_high, 1))
           << "</td>";
    } else {
      page << "<td></td><td></td><td></td>";
    }
    const Aggregate* energy = c.stat("energy_per_sample_j");
    page << "<td>" << html_escape(c.final_metric_name) << " " << median_of(c, "final_metric", 4) << "</td><td>"
         << median_of(c, "time_to_target", 1) << "</td><td>" << median_of(c, "e2e_time", 1) << "</td><td>"
         << (energy ? fixed_digits(energy->mean, 6) : "") << "</td></tr>\n";
  }
  page << "</table>\n";
}

// Each labelled run's rounds as series of one curve. `label_prefix` tells two runs apart.
struct RoundCurves {
  std::string label;
  TrainingCurves curves;
};

std::vector<RoundCurves> curves_of(const CaseResult& c, const std::string& label_prefix) {
  std::vector<RoundCurves> out;
  for (const auto& r : c.rounds)
    if (auto curves = r.curves()) out.push_back({label_prefix + "round " + std::to_string(r.number), *curves});
  return out;
}

std::vector<std::pair<double, double>> xy(const std::vector<CurvePoint>& points, bool by_time) {
  std::vector<std::pair<double, double>> out;
  for (const auto& p : points) out.push_back({by_time ? p.seconds : p.step, p.value});
  return out;
}

void training_charts(std::ostringstream& page, const std::vector<RoundCurves>& rounds) {
  if (rounds.empty()) {
    page << "<p class=\"note\">No STEP_END or EVALUATE events in the rank logs: no curves to draw.</p>\n";
    return;
  }
  const TrainingCurves& first = rounds.front().curves;
  const std::string metric = first.metric_name.empty() ? "metric" : first.metric_name;
  for (const bool by_time : {false, true}) {
    const std::string x_label = by_time ? "seconds since the case started (INIT_START)" : "training step";
    LineChart m;
    m.title = metric + " against " + (by_time ? "wall time (time to train)" : "step");
    m.x_label = x_label;
    m.y_label = metric + (first.higher_is_better ? " (higher is better)" : " (lower is better)");
    m.y_line = first.target;
    if (first.target) m.y_line_label = "target " + short_number(*first.target);
    // One marker a moment: rounds that reached the target at the same step share it.
    std::map<std::string, std::pair<std::string, Marker>> moments;  // what it says -> (rounds, marker)
    std::map<std::string, int> shared;                              // rounds beyond the first there
    for (std::size_t i = 0; i < rounds.size(); ++i) {
      const auto& rc = rounds[i];
      m.series.push_back({rc.label, xy(rc.curves.metric, by_time), true});
      if (!rc.curves.target_hit) continue;
      const auto& hit = *rc.curves.target_hit;
      const std::string when = by_time ? fixed_digits(hit.seconds, 1) + " s" : "step " + short_number(hit.step);
      auto [it, fresh] =
          moments.try_emplace(when, rc.label, Marker{by_time ? hit.seconds : hit.step, "", static_cast<int>(i)});
      if (!fresh) it->second.first += ", " + rc.label;
      if (!fresh) ++shared[when];
    }
    for (auto& [when, named] : moments) {
      // Three or more rounds at one moment are counted, not listed: the label stays short.
      const std::string who = shared[when] >= 2 ? std::to_string(shared[when] + 1) + " rounds" : named.first;
      named.second.label = (rounds.size() > 1 ? who + ": " : std::string()) + "target reached at " + when;
      m.markers.push_back(named.second);
    }
    page << line_chart_html(m) << "\n";
  }
  for (const bool by_time : {false, true}) {
    LineChart l;
    l.title = std::string("Training loss against ") + (by_time ? "wall time" : "step");
    l.x_label = by_time ? "seconds since the case started (INIT_START)" : "training step";
    l.y_label = "loss (the logged step's)";
    for (const auto& rc : rounds) l.series.push_back({rc.label, xy(rc.curves.loss, by_time)});
    page << line_chart_html(l) << "\n";
  }
  LineChart t;
  t.title = "Throughput over the run";
  t.x_label = "seconds since the case started (INIT_START)";
  t.y_label = "samples/s over each logging interval";
  t.y_from_zero = true;
  for (const auto& rc : rounds) t.series.push_back({rc.label, xy(rc.curves.throughput, true)});
  page << line_chart_html(t) << "\n";
}

// ---- base cases --------------------------------------------------------------------------------

void base_section(std::ostringstream& page, const Summary& summary) {
  page << "<table><tr><th>base case</th><th>rounds ok / run</th><th class=\"text\">figure</th><th>value (median)</th>"
          "<th class=\"text\">unit</th><th>datasheet</th><th>of datasheet</th><th>power, W</th><th>per watt</th>"
          "<th class=\"text\">check</th></tr>\n";
  std::vector<Bar> bars;
  for (const auto& c : summary.cases) {
    if (!c.is(CaseFamilyKind::Base)) continue;
    const Round* last_ok = c.last_ok();
    case_cells(page, c);
    if (!last_ok || !c.stat("value")) {
      page << "<td colspan=\"8\"></td></tr>\n";
      continue;
    }
    const Round& r = *last_ok;
    const double value = c.stat("value")->median;
    double sheet = 0;
    if (const json* figures = r.record("figures"); figures && figures->is_array() && !figures->empty())
      sheet = (*figures)[0].value("datasheet_value", 0.0);
    const std::string unit = r.unit.value_or(""), figure = r.figure.value_or("");
    const Aggregate* per_watt = c.stat("perf_per_watt");
    page << "<td class=\"text\">" << html_escape(figure) << "</td><td>" << short_number(value)
         << "</td><td class=\"text\">" << html_escape(unit) << "</td><td>"
         << (sheet > 0 ? short_number(sheet) : "not listed") << "</td><td>"
         << (sheet > 0 ? fixed_digits(100 * value / sheet, 1) + " %" : "") << "</td><td>"
         << median_of(c, "mean_power_w", 1) << "</td><td>"
         << (per_watt ? fixed_digits(per_watt->median, 4) + " " + html_escape(r.perf_per_watt_unit.value_or("")) : "")
         << "</td><td class=\"text\">" << html_escape(r.check.value_or("")) << "</td></tr>\n";
    if (sheet > 0)
      bars.push_back({c.key + " (" + figure + ")", 100 * value / sheet,
                      short_number(value) + " of " + short_number(sheet) + " " + unit + " = " +
                          fixed_digits(100 * value / sheet, 1) + " %"});
  }
  page << "</table>\n";
  if (!bars.empty()) {
    bars.insert(bars.begin(), Bar{"the datasheet figure", 100, "100 %", true});
    page << bar_chart_html("Measured, as a share of the vendor's datasheet figure (vendors/<v>/specs.yaml)", bars)
         << "\n";
  }
}

// ---- inference ---------------------------------------------------------------------------------

void inference_table(std::ostringstream& page, const Summary& summary) {
  page << "<table><tr><th>inference case</th><th>rounds ok / run</th><th>validation_<wbr>whole</th>"
          "<th>validation_<wbr>core</th><th>inference_<wbr>whole</th><th>inference_<wbr>core</th><th>accuracy "
          "(validation / engine)</th><th>batch-1 p99, ms</th></tr>\n";
  for (const auto& c : summary.cases) {
    if (!c.is(CaseFamilyKind::Inference)) continue;
    case_cells(page, c);
    page << "<td>" << median_of(c, "validation_whole", 1) << "</td><td>" << median_of(c, "validation_core", 1)
         << "</td><td>" << median_of(c, "inference_whole", 1) << "</td><td>" << median_of(c, "inference_core", 1)
         << "</td><td>"
         << (uses_synthetic_data(c)
                 ? std::string("synthetic data: none claimed")
                 : median_of(c, "validation_accuracy", 4) + " / " + median_of(c, "inference_accuracy", 4))
         << "</td><td>" << median_of(c, "latency_p99_ms", 3) << "</td></tr>\n";
  }
  page << "</table><p class=\"note\">items/s, medians over the ok rounds; <i>whole</i> includes moving data and "
          "evaluation, <i>core</i> only the synchronised compute.</p>\n";
}

void latency_section(std::ostringstream& page, const CaseResult& c) {
  // batch size -> percentile -> one value per ok round
  std::map<double, std::map<std::string, std::vector<double>>> by_batch;
  for (const auto& r : c.rounds) {
    const json* latency = r.record("latency");
    if (!r.ok() || !latency || !latency->is_array()) continue;
    for (const auto& l : *latency)
      for (const char* p : {"p50_ms", "p90_ms", "p99_ms"})
        if (l.contains(p) && l[p].is_number()) by_batch[l.value("batch_size", 0.0)][p].push_back(l[p].get<double>());
  }
  if (by_batch.empty()) return;
  page << "<table><tr><th>batch size</th><th>p50, ms</th><th>p90, ms</th><th>p99, ms</th><th>rounds</th></tr>\n";
  LineChart chart;
  chart.title = "Latency of one query at a time, per batch size (medians over rounds)";
  chart.x_label = "batch size";
  chart.y_label = "ms";
  chart.y_from_zero = true;
  for (const char* p : {"p50_ms", "p90_ms", "p99_ms"}) chart.series.push_back({std::string(p, 3), {}, true});
  for (const auto& [bs, ps] : by_batch) {
    page << "<tr><td>" << short_number(bs) << "</td>";
    std::size_t i = 0, rounds = 0;
    for (const char* p : {"p50_ms", "p90_ms", "p99_ms"}) {
      const auto it = ps.find(p);
      if (it == ps.end()) {
        page << "<td></td>";
      } else {
        const double m = aggregate(it->second).median;
        page << "<td>" << fixed_digits(m, 3) << "</td>";
        chart.series[i].points.push_back({bs, m});
        rounds = std::max(rounds, it->second.size());
      }
      ++i;
    }
    page << "<td>" << rounds << "</td></tr>\n";
  }
  page << "</table>\n";
  if (by_batch.size() > 1) page << line_chart_html(chart) << "\n";
}

// The decoding runs: TTFT and TPOT at each batch size beside the bandwidth bound.
void decode_table(std::ostringstream& page, const json& decode) {
  page << "<table><tr><th>decode batch</th><th>sampling</th><th>TTFT, ms</th><th>TPOT, ms</th><th>output "
          "tokens/s</th><th>bandwidth bound, ms</th><th>TPOT / bound</th></tr>\n";
  for (const auto& d : decode)
    page << "<tr><td>" << d.value("batch_size", 0) << "</td><td class=\"text\">" << html_escape(d.value("sampling", ""))
         << "</td><td>" << fixed_digits(d.value("ttft_ms", 0.0), 2) << "</td><td>"
         << fixed_digits(d.value("tpot_ms", 0.0), 3) << "</td><td>"
         << fixed_digits(d.value("output_tokens_per_second", 0.0), 1) << "</td><td>"
         << fixed_digits(d.value("bandwidth_bound_ms", 0.0), 3) << "</td><td>"
         << fixed_digits(d.value("tpot_over_bound", 0.0), 2) << "</td></tr>\n";
  page << "</table>\n";
}

// One LoadGen scenario's row (Offline, or a Server rate); whether it is a Server run.
bool scenario_row(std::ostringstream& page, const json& r) {
  std::string why;
  for (const auto& reason : r.value("invalid_because", json::array()))
    why += (why.empty() ? "" : "; ") + reason.get<std::string>();
  const bool server = r.value("scenario", "") == "Server";
  page << "<tr><td class=\"text\">" << html_escape(r.value("scenario", "")) << "</td><td>"
       << (server ? fixed_digits(r.value("target_rate", 0.0), 3) : std::string("all at once")) << "</td><td>"
       << r.value("queries", 0) << "</td><td>" << fixed_digits(r.value("queries_per_second", 0.0), 3) << "</td><td>"
       << fixed_digits(r.value("output_tokens_per_second", 0.0), 1) << "</td>";
  for (const char* key : {"ttft_ms", "tpot_ms"}) {
    const json& p = r[key];
    page << "<td>" << fixed_digits(p.value("p50", 0.0), 1) << " / " << fixed_digits(p.value("p90", 0.0), 1) << " / "
         << fixed_digits(p.value("p99", 0.0), 1) << "</td>";
  }
  page << "<td class=\"text\">" << (r.value("valid", false) ? "valid" : "not valid: " + html_escape(why))
       << "</td></tr>\n";
  return server;
}

// A latency-against-load chart of the Server runs, p50, p90 and p99, with the p99 bound.
LineChart latency_chart(const char* title, double bound) {
  LineChart chart;
  chart.title = title;
  chart.x_label = "target rate, queries/s";
  chart.y_label = "ms";
  chart.y_from_zero = true;
  chart.y_line = bound;
  chart.y_line_label = "p99 bound";
  for (const char* p : {"p50", "p90", "p99"}) chart.series.push_back({p, {}, true});
  return chart;
}

// A bound far above every point would flatten them against the axis: drawn only when near.
void drop_far_bound(LineChart& chart) {
  double top = 0;
  for (const auto& series : chart.series)
    for (const auto& point : series.points) top = std::max(top, point.second);
  if (chart.y_line && *chart.y_line > 4 * top) chart.y_line.reset();
}

// LoadGen's scenarios: the Offline run and each Server rate, then latency against load.
void scenario_section(std::ostringstream& page, const json& g) {
  const json& rules = g["rules"];
  page << "<table><tr><th>scenario</th><th>target queries/s</th><th>queries</th><th>queries/s</th><th>output "
          "tokens/s</th><th>TTFT p50 / p90 / p99, ms</th><th>TPOT p50 / p90 / p99, ms</th><th>LoadGen's "
          "rules</th></tr>\n";
  std::vector<json> runs = {g["offline"]};
  for (const auto& r : g.value("server", json::array())) runs.push_back(r);
  LineChart ttft = latency_chart("Server: time to first token against load", rules.value("ttft_bound_ms", 0.0));
  LineChart tpot = latency_chart("Server: time per output token against load", rules.value("tpot_bound_ms", 0.0));
  for (const auto& r : runs) {
    if (!scenario_row(page, r)) continue;
    std::size_t i = 0;
    for (const char* p : {"p50", "p90", "p99"}) {
      ttft.series[i].points.push_back({r.value("target_rate", 0.0), r["ttft_ms"].value(p, 0.0)});
      tpot.series[i].points.push_back({r.value("target_rate", 0.0), r["tpot_ms"].value(p, 0.0)});
      ++i;
    }
  }
  drop_far_bound(ttft);
  drop_far_bound(tpot);
  page << "</table>\n<p class=\"note\">Highest Server rate within the bounds (TTFT p99 &le; "
       << fixed_digits(rules.value("ttft_bound_ms", 0.0), 0) << " ms, TPOT p99 &le; "
       << fixed_digits(rules.value("tpot_bound_ms", 0.0), 0)
       << " ms): " << fixed_digits(g.value("server_max_rate_within_bounds", 0.0), 3) << " queries/s."
       << (rules.contains("weaker_than_loadgen") ? " " + html_escape(rules.value("weaker_than_loadgen", "")) + "." : "")
       << "</p>\n";
  if (runs.size() > 1) page << line_chart_html(ttft) << "\n" << line_chart_html(tpot) << "\n";
}

// A generating case's step (h) from its first ok round: decoding, LoadGen's scenarios, and latency
// against load for the Server runs.
void generation_section(std::ostringstream& page, const CaseResult& c) {
  const json* found = nullptr;
  for (const auto& r : c.rounds)
    if (r.ok() && r.record("generation")) {
      found = r.record("generation");
      break;
    }
  if (!found) return;
  const json& g = *found;
  page << "<p class=\"note\">" << html_escape(g.value("engine", "")) << "; copy bandwidth "
       << fixed_digits(g.value("copy_bandwidth_gb_per_s", 0.0), 1) << " GB/s (the first ok round).</p>\n";
  if (g.contains("decode") && !g["decode"].empty()) decode_table(page, g["decode"]);
  if (g.contains("offline")) scenario_section(page, g);
  page << sweep_section_html(c);
}

// ---- accelerators ------------------------------------------------------------------------------

struct MonitorChart {
  const char* metric;
  const char* title;
  const char* unit;
};

// Every round's monitor series of one case: metric -> series labelled "round k · node device",
// time from the round's first sample.
std::map<std::string, std::vector<Series>> case_monitor_series(const fs::path& case_dir, const CaseResult& c) {
  std::map<std::string, std::vector<Series>> out;
  for (const auto& r : c.rounds) {
    const int round = r.number;
    const fs::path round_dir = case_dir / ("round" + std::to_string(round));
    std::map<std::string, std::map<std::string, Series>> by_metric;
    double t0 = 1e300;
    std::error_code ec;
    for (const auto& node : fs::directory_iterator(round_dir, ec))
      monitor::for_each_monitor_row((node.path() / "monitor.csv").string(), [&](const monitor::MonitorRow& row) {
        if (row.device.rfind("cpu", 0) == 0 && row.device != "cpu") return;  // per core: too many lines
        t0 = std::min(t0, row.time);
        const std::string label = "round " + std::to_string(round) + " · " + row.node + " " + row.device;
        Series& s = by_metric[row.metric][label];
        s.label = label;
        s.points.push_back({row.time, row.value});
      });
    for (auto& [metric, series] : by_metric)
      for (auto& [label, s] : series) {
        for (auto& p : s.points) p.first -= t0;
        std::sort(s.points.begin(), s.points.end());
        out[metric].push_back(std::move(s));
      }
  }
  return out;
}

void accelerator_section(std::ostringstream& page, const CaseResult& c, const std::string& run_dir) {
  std::string dir_name = c.dir.empty() ? c.key : c.dir;
  std::replace(dir_name.begin(), dir_name.end(), ':', '_');
  const auto series = case_monitor_series(fs::path(run_dir) / dir_name, c);
  const std::vector<MonitorChart> charts = {{"power_w", "Power", "W"},
                                            {"util_percent", "Utilisation", "%"},
                                            {"mem_used_bytes", "Memory used", "bytes"},
                                            {"temperature_c", "Temperature", "°C"}};
  std::ostringstream body;
  std::size_t drawn = 0, samples = 0;
  for (const auto& chart : charts) {
    auto it = series.find(chart.metric);
    if (it == series.end()) continue;
    std::size_t metric_samples = 0;
    for (const auto& s : it->second) metric_samples = std::max(metric_samples, s.points.size());
    samples = std::max(samples, metric_samples);
    if (metric_samples < kMinMonitorSamples) continue;
    ++drawn;
    LineChart l;
    l.title = std::string(chart.title) + " per device";
    l.x_label = "seconds since the round's first sample";
    l.y_label = std::string(chart.metric) + ", " + chart.unit;
    l.y_from_zero = true;
    l.series = it->second;
    if (l.series.size() > kMaxMonitorLines) {
      const std::string first = l.series.front().label.substr(0, l.series.front().label.find(" · "));
      l.series.erase(std::remove_if(l.series.begin(), l.series.end(),
                                    [&first](const Series& s) { return s.label.rfind(first + " · ", 0) != 0; }),
                     l.series.end());
      l.title += " (" + first + " only: " + std::to_string(it->second.size()) + " lines in all)";
    }
    body << line_chart_html(l) << "\n";
  }
  const bool base = c.is(CaseFamilyKind::Base);
  if (drawn > 0) {
    // A base case's rounds last a second or two: its monitors are there, folded, not in the way.
    page << "<details" << (base ? "" : " open") << "><summary>Devices over time (" << drawn << " chart"
         << (drawn == 1 ? "" : "s") << ")</summary>\n"
         << body.str() << "</details>\n";
  } else if (samples > 0) {
    page << "<p class=\"note\">Devices over time: " << samples << " monitor sample" << (samples == 1 ? "" : "s")
         << " a device, too few to draw (each round is shorter than " << kMinMonitorSamples
         << " monitor periods).</p>\n";
  }
  std::vector<Bar> energy;
  for (const auto& r : c.rounds)
    if (const double* joules = r.find("energy_j")) {
      const double* per_sample = r.find("energy_per_sample_j");
      energy.push_back(
          {"round " + std::to_string(r.number), *joules,
           fixed_digits(*joules, 1) + " J" + (per_sample ? " (" + short_number(*per_sample) + " J/sample)" : "")});
    }
  if (!energy.empty()) page << bar_chart_html("Energy per round (the devices the round ran on)", energy) << "\n";
}

}  // namespace

std::string report_html(const Summary& summary, const std::string& run_dir) {
  std::ostringstream page;
  const std::string name = summary.run.empty() ? "run" : summary.run;
  html_page_start(page, "xpuperf " + name);
  page << "<h1>xpuperf " << html_escape(name) << "</h1>\n";
  system_line(page, summary);
  bool any[4] = {false, false, false, false};
  for (const auto& c : summary.cases) {
    const CaseFamilyKind f = c.family_or_training();
    any[f == CaseFamilyKind::Base        ? 0
        : f == CaseFamilyKind::Training  ? 1
        : f == CaseFamilyKind::Inference ? 2
                                         : 3] = true;
  }
  if (any[0]) {
    page << "<h2>Hardware (base cases)</h2>\n";
    base_section(page, summary);
  }
  if (any[3]) {
    page << "<h2>Operators</h2>\n";
    operator_section(page, summary);
  }
  if (any[1]) {
    page << "<h2>Training</h2>\n";
    training_table(page, summary);
  }
  if (any[2]) {
    page << "<h2>Inference</h2>\n";
    inference_table(page, summary);
  }
  for (const auto& c : summary.cases) {
    page << "<h3>" << html_escape(c.key) << "</h3>\n";
    failed_rounds(page, c);
    if (c.is(CaseFamilyKind::Training)) training_charts(page, curves_of(c, ""));
    if (c.is(CaseFamilyKind::Inference)) {
      for (const auto& r : c.rounds)
        if (r.caveat) {
          page << "<p class=\"note\">" << html_escape(*r.caveat) << "</p>\n";
          break;
        }
      latency_section(page, c);
      generation_section(page, c);
    }
    accelerator_section(page, c, run_dir);
  }
  page << "<p class=\"note\"><small>Written by xpuperf " << html_escape(summary.xpuperf_version)
       << " from the run folder; summary.json has every figure.</small></p>\n</body></html>\n";
  return page.str();
}

std::string compare_html(const Summary& a, const Summary& b, const std::string& run_a, const std::string& run_b,
                         const std::vector<FigureComparison>& rows, double fail_percent) {
  std::ostringstream page;
  html_page_start(page, "xpuperf compare " + (a.run.empty() ? "A" : a.run) + " / " + (b.run.empty() ? "B" : b.run));
  page << "<h1>xpuperf compare</h1>\n<p>A: " << html_escape(run_a) << " (" << html_escape(a.run)
       << ")<br>B: " << html_escape(run_b) << " (" << html_escape(b.run) << ")</p>\n";
  page << "<table><tr><th>case</th><th class=\"text\">figure</th><th>mean A</th><th>mean B</th><th>B / A</th>"
          "<th>Welch p</th><th class=\"text\">verdict</th></tr>\n";
  for (const auto& r : rows) {
    const std::string v = verdict(r, fail_percent);
    const char* cls = v.find("worse") != std::string::npos    ? "bad"
                      : v.find("better") != std::string::npos ? "good"
                                                              : "";
    page << "<tr><td>" << html_escape(r.case_key) << "</td><td class=\"text\">" << html_escape(r.figure) << "</td><td>"
         << short_number(r.mean_a) << "</td><td>" << short_number(r.mean_b) << "</td><td>" << fixed_digits(r.ratio, 3)
         << "</td><td>" << (r.test ? fixed_digits(r.test->p, 4) : "") << "</td><td class=\"text " << cls << "\">"
         << html_escape(v) << "</td></tr>\n";
  }
  page << "</table><p class=\"note\">A change is significant when Welch's two-sided p &lt; 0.05 over the rounds.</p>\n";
  // Both runs' curves of each training case they share, on the same axes.
  for (const auto& ca : a.cases)
    for (const auto& cb : b.cases) {
      if (!ca.is(CaseFamilyKind::Training) || ca.identity() != cb.identity()) continue;
      page << "<h2>" << html_escape(ca.identity()) << "</h2>\n";
      auto rounds = curves_of(ca, "A ");
      for (auto& rc : curves_of(cb, "B ")) rounds.push_back(std::move(rc));
      training_charts(page, rounds);
    }
  page << "</body></html>\n";
  return page.str();
}

}  // namespace xpuperf::report
