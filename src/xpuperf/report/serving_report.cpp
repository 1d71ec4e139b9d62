#include "xpuperf/report/serving_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "xpuperf/core/strings.h"
#include "xpuperf/monitor/analysis.h"
#include "xpuperf/report/chart.h"
#include "xpuperf/report/stats.h"

namespace xpuperf::report {

using nlohmann::json;

namespace {

const json* sweep_record(const Round& r) {
  const json* g = r.record("generation");
  if (!g || !g->contains("sweep") || !(*g)["sweep"].contains("points")) return nullptr;
  return &(*g)["sweep"];
}

double point_number(const json& j, const char* key, const char* sub = nullptr) {
  if (!j.contains(key)) return 0;
  const json& v = sub ? j[key].value(sub, json()) : j[key];
  return v.is_number() ? v.get<double>() : 0;
}

// "1024/256", or a trace's "trace lengths.csv".
std::string point_lengths(const json& p) {
  if (p.contains("lengths") && p["lengths"].is_string()) return p["lengths"].get<std::string>();
  return std::to_string(p.value("input_tokens", 0)) + "/" + std::to_string(p.value("output_tokens", 0));
}

}  // namespace

std::vector<SweepPoint> sweep_points(const CaseResult& c) {
  std::vector<SweepPoint> points;
  std::map<std::string, std::size_t> index;
  for (const auto& r : c.rounds) {
    const json* sweep = r.ok() ? sweep_record(r) : nullptr;
    if (!sweep) continue;
    for (const auto& p : (*sweep)["points"]) {
      if (!p.value("ok", false)) continue;
      const auto input = p.value("input_tokens", std::int64_t{0}), output = p.value("output_tokens", std::int64_t{0});
      const auto concurrency = p.value("concurrency", std::int64_t{0});
      const std::string key = point_lengths(p) + " at concurrency " + std::to_string(concurrency);
      auto [it, added] = index.emplace(key, points.size());
      if (added) points.push_back({key, point_lengths(p), input, output, concurrency, {}, {}, {}, {}});
      SweepPoint& s = points[it->second];
      s.output_tokens_per_second.push_back(point_number(p, "output_tokens_per_second_per_gpu"));
      s.tokens_per_second_per_user.push_back(point_number(p, "tokens_per_second_per_user"));
      s.tpot_p50_ms.push_back(point_number(p, "tpot_ms", "p50"));
      s.ttft_p50_ms.push_back(point_number(p, "ttft_ms", "p50"));
    }
  }
  return points;
}

std::string sweep_section_html(const CaseResult& c) {
  const auto points = sweep_points(c);
  const json* first = nullptr;
  for (const auto& r : c.rounds)
    if (r.ok() && (first = sweep_record(r))) break;
  if (!first) return "";
  std::ostringstream html;
  html << "<h3>Serving sweep</h3>\n<p class=\"note\">" << html_escape(first->value("engine", std::string())) << ". "
       << html_escape(first->value("definitions", std::string())) << ".</p>\n";
  // The frontier: a series per input/output pair, its points in order of tokens/s per user.
  LineChart chart;
  chart.title = "Throughput against interactivity (each point labelled by its concurrency; the mean over rounds)";
  chart.x_label = "tokens/s per user";
  chart.y_label = "output tokens/s per GPU";
  chart.y_from_zero = true;
  std::map<std::string, std::vector<const SweepPoint*>> by_pair;
  for (const auto& p : points) by_pair[p.lengths].push_back(&p);
  for (auto& [pair, list] : by_pair) {
    std::sort(list.begin(), list.end(), [](const SweepPoint* a, const SweepPoint* b) {
      return aggregate(a->tokens_per_second_per_user).mean < aggregate(b->tokens_per_second_per_user).mean;
    });
    Series s;
    s.label = pair;
    s.dots = true;
    for (const auto* p : list) {
      s.points.push_back({aggregate(p->tokens_per_second_per_user).mean, aggregate(p->output_tokens_per_second).mean});
      s.labels.push_back(std::to_string(p->concurrency));
    }
    chart.series.push_back(s);
  }
  if (!chart.series.empty()) html << line_chart_html(chart) << "\n";
  html << "<table><tr><th>in / out</th><th>concurrency</th><th>output tokens/s per GPU</th><th>tokens/s per "
          "user</th><th>TTFT p50 / p99 (ms)</th><th>TPOT p50 / p99 (ms)</th><th>host share</th><th>preemptions</th>"
          "<th>J per output token</th><th>cost per M output tokens</th></tr>\n";
  for (const auto& p : (*first)["points"]) {
    html << "<tr><td>" << html_escape(point_lengths(p)) << "</td><td>" << p.value("concurrency", 0) << "</td>";
    if (!p.value("ok", false)) {
      html << "<td colspan=\"8\">failed: " << html_escape(p.value("error", std::string())) << "</td></tr>\n";
      continue;
    }
    html << "<td>" << fixed_digits(point_number(p, "output_tokens_per_second_per_gpu"), 1) << "</td><td>"
         << fixed_digits(point_number(p, "tokens_per_second_per_user"), 1) << "</td><td>"
         << fixed_digits(point_number(p, "ttft_ms", "p50"), 1) << " / "
         << fixed_digits(point_number(p, "ttft_ms", "p99"), 1) << "</td><td>"
         << fixed_digits(point_number(p, "tpot_ms", "p50"), 2) << " / "
         << fixed_digits(point_number(p, "tpot_ms", "p99"), 2) << "</td><td>"
         << fixed_digits(100 * point_number(p, "host_share_of_step"), 1) << " %</td><td>" << p.value("preemptions", 0)
         << "</td><td>"
         << (p.contains("joules_per_output_token") ? fixed_digits(point_number(p, "joules_per_output_token"), 4)
                                                   : std::string("–"))
         << "</td><td>"
         << (p.contains("cost_per_million_output_tokens")
                 ? fixed_digits(point_number(p, "cost_per_million_output_tokens"), 3)
                 : std::string("–"))
         << "</td></tr>\n";
  }
  html << "</table>\n";
  if (first->contains("gpu_hour_cost"))
    html << "<p class=\"note\">Cost from gpu_hour_cost "
         << fixed_digits(point_number(*first, "gpu_hour_cost", "value"), 2)
         << ": the user's own figure, not a market price.</p>\n";
  return html.str();
}

void put_sweep_energy(json& generation, const std::vector<std::string>& monitor_files,
                      const std::set<std::string>& accelerators) {
  if (monitor_files.empty() || !generation.contains("sweep") || !generation["sweep"].contains("points")) return;
  for (auto& p : generation["sweep"]["points"]) {
    const double t0 = p.value("started_unix", 0.0), t1 = p.value("ended_unix", 0.0);
    const double tokens = p.contains("output_tokens_total")
                              ? point_number(p, "output_tokens_total")
                              : point_number(p, "queries") * point_number(p, "output_tokens");
    if (!p.value("ok", false) || t0 <= 0 || t1 <= t0 || tokens <= 0) continue;
    const double watts = monitor::mean_power_in_window(monitor_files, t0, t1, accelerators);
    if (watts <= 0) continue;
    p["mean_power_w"] = watts;
    p["joules_per_output_token"] = watts * (t1 - t0) / tokens;
    p["output_tokens_per_second_per_megawatt"] = point_number(p, "output_tokens_per_second_per_gpu") / (watts / 1e6);
  }
}

bool has_serving_sweep(const Summary& summary) {
  for (const auto& c : summary.cases)
    for (const auto& r : c.rounds)
      if (sweep_record(r)) return true;
  return false;
}

std::string serving_sweep_csv(const Summary& summary) {
  std::ostringstream csv;
  csv << "case,round,lengths,input_tokens,output_tokens,concurrency,ok,queries,output_tokens_per_second_per_gpu,"
         "input_tokens_per_second_per_gpu,tokens_per_second_per_user,ttft_p50_ms,ttft_p90_ms,ttft_p99_ms,tpot_p50_ms,"
         "tpot_p90_ms,tpot_p99_ms,e2e_p50_ms,e2e_p99_ms,host_share_of_step,pool_use_max,preemptions,"
         "joules_per_output_token,cost_per_million_output_tokens,error\n";
  for (const auto& c : summary.cases)
    for (const auto& r : c.rounds) {
      const json* sweep = sweep_record(r);
      if (!sweep) continue;
      for (const auto& p : (*sweep)["points"]) {
        const bool ok = p.value("ok", false);
        const auto cell = [&](const char* key, const char* sub = nullptr) {
          if (!ok || !p.contains(key)) return std::string();
          const double v = point_number(p, key, sub);  // a count as an integer, a figure as the shortest text
          return v == std::floor(v) && std::fabs(v) < 1e15 ? std::to_string(static_cast<long long>(v)) : json(v).dump();
        };
        std::string error = p.value("error", std::string());
        std::replace(error.begin(), error.end(), '"', '\'');
        csv << c.key << "," << r.number << "," << point_lengths(p) << "," << p.value("input_tokens", 0) << ","
            << p.value("output_tokens", 0) << "," << p.value("concurrency", 0) << "," << (ok ? "true" : "false") << ","
            << cell("queries") << "," << cell("output_tokens_per_second_per_gpu") << ","
            << cell("input_tokens_per_second_per_gpu") << "," << cell("tokens_per_second_per_user") << ","
            << cell("ttft_ms", "p50") << "," << cell("ttft_ms", "p90") << "," << cell("ttft_ms", "p99") << ","
            << cell("tpot_ms", "p50") << "," << cell("tpot_ms", "p90") << "," << cell("tpot_ms", "p99") << ","
            << cell("e2e_ms", "p50") << "," << cell("e2e_ms", "p99") << "," << cell("host_share_of_step") << ","
            << cell("pool_use_max") << "," << cell("preemptions") << "," << cell("joules_per_output_token") << ","
            << cell("cost_per_million_output_tokens") << "," << (error.empty() ? "" : "\"" + error + "\"") << "\n";
      }
    }
  return csv.str();
}

void compare_sweep_points(const CaseResult& a, const CaseResult& b, std::vector<FigureComparison>& out) {
  const auto points_b = sweep_points(b);
  for (const auto& pa : sweep_points(a)) {
    const auto pb =
        std::find_if(points_b.begin(), points_b.end(), [&pa](const SweepPoint& p) { return p.key == pa.key; });
    if (pb == points_b.end()) continue;
    for (const bool throughput : {true, false}) {
      const auto& va = throughput ? pa.output_tokens_per_second : pa.tpot_p50_ms;
      const auto& vb = throughput ? pb->output_tokens_per_second : pb->tpot_p50_ms;
      FigureComparison c;
      c.case_key = a.identity();
      c.figure = "sweep " + pa.key + (throughput ? " output tokens/s per GPU" : " TPOT p50 ms");
      c.higher_is_better = throughput;
      c.mean_a = aggregate(va).mean;
      c.mean_b = aggregate(vb).mean;
      c.ratio = c.mean_a != 0 ? c.mean_b / c.mean_a : 0;
      c.test = welch_t_test(va, vb);
      c.significant = c.test && c.test->p < 0.05;
      out.push_back(c);
    }
  }
}

}  // namespace xpuperf::report
