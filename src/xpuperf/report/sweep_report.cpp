#include "xpuperf/report/sweep_report.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "xpuperf/core/strings.h"
#include "xpuperf/report/chart.h"
#include "xpuperf/report/html.h"
#include "xpuperf/report/stats.h"

namespace xpuperf::report {
using nlohmann::json;

namespace {

std::vector<double> round_values(const json& row, const char* key) {
  std::vector<double> values;
  for (const auto& r : row.value("rounds", json::array()))
    if (r.value("status", "") == "ok" && r.contains(key) && r[key].is_number()) values.push_back(r[key].get<double>());
  return values;
}

// The loss curve of the row's first round that ran.
const json* curve_of(const json& row) {
  if (!row.contains("rounds")) return nullptr;
  for (const auto& r : row["rounds"])
    if (r.value("status", "") == "ok" && r.contains("loss_curve") && !r["loss_curve"].empty()) return &r["loss_curve"];
  return nullptr;
}

json aggregate_row(const json& row) {
  json a = json::object();
  if (const auto sps = round_values(row, "samples_per_second"); !sps.empty()) {
    const Aggregate s = aggregate(sps);
    a["samples_per_second"] = {{"mean", s.mean}, {"std", s.std}, {"n", s.n}};
  }
  if (const auto v = round_values(row, "tokens_per_second"); !v.empty()) a["tokens_per_second"] = aggregate(v).mean;
  if (const auto v = round_values(row, "mfu"); !v.empty()) a["mfu"] = aggregate(v).mean;
  if (const auto v = round_values(row, "peak_device_memory_mib"); !v.empty())
    a["peak_device_memory_mib"] = *std::max_element(v.begin(), v.end());
  if (const auto v = round_values(row, "energy_per_sample_j"); !v.empty()) a["energy_per_sample_j"] = aggregate(v).mean;
  return a;
}

// What the row sets `key` to (the last setting wins); `fallback` where it sets nothing.
std::string set_value_of(const json& row, const std::string& key, const std::string& fallback) {
  std::string value = fallback;
  if (row.contains("sets"))
    for (const auto& set : row["sets"])
      if (set.is_string() && set.get<std::string>().rfind(key + "=", 0) == 0)
        value = set.get<std::string>().substr(key.size() + 1);
  return value;
}

// The largest relative difference of `curve` from `reference` over the steps both have.
json parity(const json& curve, const json& reference, double tolerance) {
  const std::size_t n = std::min(curve.size(), reference.size());
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double want = reference[i].get<double>(), got = curve[i].get<double>();
    const double d = std::isfinite(got) ? std::abs(got - want) / std::max(std::abs(want), 1e-12) : INFINITY;
    if (d > worst || !std::isfinite(d)) {
      worst = d;
      at = i + 1;
    }
  }
  json p = {{"steps_compared", n},
            {"max_relative_difference", std::isfinite(worst) ? json(worst) : json("inf")},
            {"at_step", at},
            {"tolerance", tolerance}};
  p["within"] = n > 0 && std::isfinite(worst) && worst <= tolerance;
  return p;
}

std::string thousands(double v) {
  std::string s = fixed_digits(v, 0);
  for (int i = static_cast<int>(s.size()) - 3; i > (s[0] == '-' ? 1 : 0); i -= 3)
    s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

std::string percent(double fraction, bool sign) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  if (sign && fraction > 0) out << "+";
  if (sign && fraction < 0) out << "−";
  out << (sign ? std::abs(fraction) : fraction) * 100 << " %";
  return out.str();
}

// The table's cells of one row, in column order.
std::vector<std::string> cells(const json& row) {
  std::vector<std::string> c{row["name"].get<std::string>()};
  if (row.value("status", "") != "ok") {
    c.push_back(row.value("status", "failed") + ": " + row.value("reason", ""));
    while (c.size() < 9) c.push_back("");  // one a column
    return c;
  }
  const json& a = row["aggregate"];
  if (a.contains("samples_per_second")) {
    const json& s = a["samples_per_second"];
    c.push_back(fixed_digits(s["mean"].get<double>(), 2) +
                (s["n"].get<int>() > 1 ? " ± " + fixed_digits(s["std"].get<double>(), 2) : std::string(" (n = 1)")));
  } else {
    c.push_back("");
  }
  c.push_back(a.contains("tokens_per_second") ? thousands(a["tokens_per_second"].get<double>()) : "");
  c.push_back(a.contains("mfu") ? percent(a["mfu"].get<double>(), false) : "");
  c.push_back(a.contains("peak_device_memory_mib") ? thousands(a["peak_device_memory_mib"].get<double>()) + " MiB"
                                                   : "");
  c.push_back(a.contains("energy_per_sample_j") ? fixed_digits(a["energy_per_sample_j"].get<double>(), 3) + " J" : "");
  c.push_back(row.contains("speedup") ? fixed_digits(row["speedup"].get<double>(), 2) + "×" : "");
  c.push_back(row.contains("memory_saving") ? percent(-row["memory_saving"].get<double>(), true) : "");
  if (row.value("reference", false)) {
    c.push_back("reference");
  } else if (row.contains("parity_undefined")) {
    c.push_back("not compared: " + row["parity_undefined"].get<std::string>());
  } else if (row.contains("parity")) {
    const json& p = row["parity"];
    const std::string worst =
        p["max_relative_difference"].is_number() ? percent(p["max_relative_difference"].get<double>(), false) : "inf";
    c.push_back((p["within"].get<bool>() ? "ok, max " : "BROKEN: ") + worst + " at step " +
                std::to_string(p["at_step"].get<int>()));
  } else {
    c.push_back("no loss curve");
  }
  return c;
}

const std::vector<std::string> kColumns = {"strategy",          "samples/s",       "tokens/s", "MFU",
                                           "peak memory / GPU", "energy / sample", "speed-up", "memory",
                                           "loss vs reference"};

}  // namespace

json sweep_summary(const json& input) {
  json s = input;
  s["schema"] = kSweepSchema;
  const double tolerance = s.value("loss_tolerance", 0.02);
  int reference = -1;
  for (std::size_t i = 0; i < s["rows"].size(); ++i) {
    json& row = s["rows"][i];
    row["aggregate"] = aggregate_row(row);
    if (round_values(row, "samples_per_second").empty() && row.value("status", "") == "ok") {
      row["status"] = "failed";
      if (row.value("reason", "").empty()) row["reason"] = "no round finished";
    }
    if (reference < 0 && row.value("status", "") == "ok") reference = static_cast<int>(i);
  }
  s["reference"] = reference >= 0 ? json(s["rows"][static_cast<std::size_t>(reference)]["name"]) : json(nullptr);
  if (reference < 0) return s;
  const json& ref = s["rows"][static_cast<std::size_t>(reference)];
  const double ref_sps = ref["aggregate"]["samples_per_second"]["mean"].get<double>();
  const double ref_mem = ref["aggregate"].value("peak_device_memory_mib", 0.0);
  const json* ref_curve = curve_of(ref);
  for (std::size_t i = 0; i < s["rows"].size(); ++i) {
    json& row = s["rows"][i];
    if (row.value("status", "") != "ok") continue;
    row["reference"] = static_cast<int>(i) == reference;
    row["speedup"] = row["aggregate"]["samples_per_second"]["mean"].get<double>() / ref_sps;
    if (ref_mem > 0 && row["aggregate"].contains("peak_device_memory_mib"))
      row["memory_saving"] = 1.0 - row["aggregate"]["peak_device_memory_mib"].get<double>() / ref_mem;
    if (set_value_of(row, "lora_rank", "0") != set_value_of(ref, "lora_rank", "0"))
      row["parity_undefined"] = "LoRA trains adapters on a frozen model, another training than the reference's";
    else if (set_value_of(row, "num_local_experts", "") != set_value_of(ref, "num_local_experts", ""))
      row["parity_undefined"] = "another model than the reference's (its number of experts)";
    else if (set_value_of(row, "sequence_packing", "false") != set_value_of(ref, "sequence_packing", "false"))
      row["parity_undefined"] =
          "packed rows hold several samples each (bert; its samples/s counts rows: STEP_END's real_token_share × "
          "tokens/s is the real tokens' rate), or each document attends within itself (the causal cases): other "
          "inputs than the reference's";
    else if (set_value_of(row, "offload_overlap", "false") != set_value_of(ref, "offload_overlap", "false"))
      row["parity_undefined"] =
          "offload_overlap updates the weights one step late after its first 10 steps, another training than the "
          "reference's";
    else if (const json* curve = curve_of(row); curve && ref_curve && static_cast<int>(i) != reference)
      row["parity"] = parity(*curve, *ref_curve, tolerance);
  }
  return s;
}

std::string sweep_markdown(const json& s) {
  std::ostringstream out;
  out << "# xpuperf sweep: " << s.value("case", "") << " on " << s.value("vendor", "") << " " << s.value("hardware", "")
      << "\n\n";
  out << s.value("steps", 0) << " steps timed after " << s.value("warmup_steps", 0) << " warm-up steps, "
      << s.value("repeats", 1) << " repeat(s) a row; samples/s is the mean ± std over the repeats. Ratios and loss "
      << "parity are against "
      << (s["reference"].is_null() ? std::string("no row (none ran)") : s["reference"].get<std::string>())
      << "; a loss curve may differ from it by at most " << percent(s.value("loss_tolerance", 0.02), false)
      << " at any step.\n\n";
  out << "|";
  for (const auto& c : kColumns) out << " " << c << " |";
  out << "\n|";
  for (std::size_t i = 0; i < kColumns.size(); ++i) out << (i == 0 ? " --- |" : " ---: |");
  out << "\n";
  for (const auto& row : s["rows"]) {
    out << "|";
    for (const auto& c : cells(row)) out << " " << c << " |";
    out << "\n";
  }
  int broken = 0;
  for (const auto& row : s["rows"])
    if (row.contains("parity") && !row["parity"]["within"].get<bool>()) ++broken;
  if (broken > 0)
    out << "\n**" << broken << " row" << (broken == 1 ? "" : "s")
        << " broke loss parity**: their loss left the reference's by more than the tolerance.\n";
  return out.str();
}

std::string sweep_html(const json& s) {
  std::ostringstream page;
  html_page_start(page, "xpuperf sweep " + s.value("case", ""));
  page << "<h1>Sweep: " << html_escape(s.value("case", "")) << " on " << html_escape(s.value("vendor", "")) << " "
       << html_escape(s.value("hardware", "")) << "</h1>\n<p class=\"note\">" << s.value("steps", 0)
       << " steps timed after " << s.value("warmup_steps", 0) << " warm-up steps, " << s.value("repeats", 1)
       << " repeat(s) a row. Ratios and loss parity against "
       << html_escape(s["reference"].is_null() ? std::string("no row") : s["reference"].get<std::string>())
       << ".</p>\n<table><tr>";
  for (const auto& c : kColumns) page << "<th>" << html_escape(c) << "</th>";
  page << "</tr>\n";
  for (const auto& row : s["rows"]) {
    const bool broken = row.contains("parity") && !row["parity"]["within"].get<bool>();
    page << "<tr" << (row.value("status", "") != "ok" || broken ? " class=\"bad\"" : "") << ">";
    for (const auto& c : cells(row)) page << "<td>" << html_escape(c) << "</td>";
    page << "</tr>\n";
  }
  page << "</table>\n";
  std::vector<Bar> speed, memory;
  for (const auto& row : s["rows"]) {
    if (row.value("status", "") != "ok") continue;
    const std::string name = row["name"].get<std::string>();
    const double sps = row["aggregate"]["samples_per_second"]["mean"].get<double>();
    speed.push_back({name, sps, fixed_digits(sps, 2) + " samples/s", row.value("reference", false)});
    if (row["aggregate"].contains("peak_device_memory_mib")) {
      const double mib = row["aggregate"]["peak_device_memory_mib"].get<double>();
      memory.push_back({name, mib, thousands(mib) + " MiB", row.value("reference", false)});
    }
  }
  page << bar_chart_html("Throughput", speed);
  if (!memory.empty()) page << bar_chart_html("Peak device memory per GPU", memory);
  LineChart losses;
  losses.title = "Loss at each step (same data and seed)";
  losses.x_label = "step";
  losses.y_label = "loss";
  for (const auto& row : s["rows"]) {
    const json* curve = curve_of(row);
    if (!curve) continue;
    Series series;
    series.label = row["name"].get<std::string>();
    for (std::size_t i = 0; i < curve->size(); ++i)
      series.points.emplace_back(static_cast<double>(i + 1), (*curve)[i].get<double>());
    losses.series.push_back(std::move(series));
  }
  page << line_chart_html(losses) << "</body></html>\n";
  return page.str();
}

}  // namespace xpuperf::report
