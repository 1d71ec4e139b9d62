// summary.md: the summary's Markdown (summary.h), its tables by family.

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "xpuperf/core/strings.h"
#include "xpuperf/report/measured_roof.h"
#include "xpuperf/report/operator_rows.h"
#include "xpuperf/report/stats.h"
#include "xpuperf/report/summary.h"

namespace xpuperf::report {
using json = nlohmann::json;

std::string rounds_ok_text(const CaseResult& c) {
  return std::to_string(c.rounds_used) + " / " + std::to_string(c.rounds.size());
}

std::string mean_and_spread(const Aggregate& a, int digits) {
  if (a.n < 2) return fixed_digits(a.mean, digits) + " (n = 1)";
  return fixed_digits(a.mean, digits) + " ± " + fixed_digits(a.std, digits);
}

bool uses_synthetic_data(const CaseResult& c) {
  for (const auto& r : c.rounds)
    if (r.data && r.data->rfind("synthetic", 0) == 0) return true;
  return false;
}

namespace {

// A figure's median over the ok rounds, or `none` when no ok round measured it.
std::string median(const CaseResult& c, const char* figure, int digits, const std::string& none = "") {
  const Aggregate* a = c.stat(figure);
  return a ? fixed_digits(a->median, digits) : none;
}

// The hardware figures: one row per base case, the headline's median over ok rounds.
std::string base_table(const Summary& s) {
  std::ostringstream md;
  md << "| base case | rounds ok / run | figure | value (median) | unit | of datasheet | power (W) | per watt | check "
        "|\n| --- | ---: | --- | ---: | --- | ---: | ---: | ---: | --- |\n";
  for (const auto& c : s.cases) {
    if (!c.is(CaseFamilyKind::Base)) continue;
    const Round* r = c.last_ok();
    md << "| " << c.key << " | " << rounds_ok_text(c) << " | ";
    if (!r || !c.stat("value")) {
      md << " |  |  |  |  |  |  |\n";
      continue;
    }
    const Aggregate* per_watt = c.stat("perf_per_watt");
    md << r->figure.value_or("") << " | " << median(c, "value", 3) << " | " << r->unit.value_or("") << " | "
       << (r->datasheet_ratio ? fixed_digits(100 * *r->datasheet_ratio, 1) + " %" : "") << " | "
       << median(c, "mean_power_w", 1) << " | "
       << (per_watt ? fixed_digits(per_watt->median, 4) + " " + r->perf_per_watt_unit.value_or("") : "") << " | "
       << r->check.value_or("") << " |\n";
  }
  md << "\n";
  return md.str();
}

// FlagPerf inference's four throughputs and both accuracies per inference case (medians over ok rounds).
std::string inference_table(const Summary& s) {
  std::ostringstream md;
  md << "\n| inference case | rounds ok / run | validation_whole | validation_core | inference_whole | inference_core "
        "| "
        "accuracy (validation / engine) | batch-1 p99 (ms) |\n| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: "
        "|\n";
  for (const auto& c : s.cases) {
    if (!c.is(CaseFamilyKind::Inference)) continue;
    md << "| " << c.key << " | " << rounds_ok_text(c) << " | " << median(c, "validation_whole", 1, "null") << " | "
       << median(c, "validation_core", 1, "null") << " | " << median(c, "inference_whole", 1, "null") << " | "
       << median(c, "inference_core", 1, "null") << " | "
       << (uses_synthetic_data(c)
               ? std::string("synthetic data: none claimed")
               : median(c, "validation_accuracy", 4, "null") + " / " + median(c, "inference_accuracy", 4, "null"))
       << " | " << median(c, "latency_p99_ms", 3, "null") << " |\n";
  }
  return md.str();
}

// The first ok round's generation record (decoding, LoadGen's scenarios); nullptr when none has one.
const json* first_generation(const CaseResult& c) {
  for (const auto& r : c.rounds)
    if (r.ok() && r.record("generation")) return r.record("generation");
  return nullptr;
}

// The generating inference cases (llm): prefill, decoding and serving (medians over ok rounds).
std::string generation_table(const Summary& s) {
  std::ostringstream md;
  md << "\n| generating case | prefill tokens/s | decode TPOT (ms, first run) | Offline output tokens/s | highest "
        "Server rate within the bounds (queries/s) | Server runs valid |\n| --- | ---: | ---: | ---: | ---: | --- |\n";
  for (const auto& c : s.cases) {
    if (!c.is(CaseFamilyKind::Inference)) continue;
    const json* g = first_generation(c);
    if (!g) continue;
    int valid = 0, runs = 0;
    for (const auto& run : g->value("server", json::array())) {
      ++runs;
      valid += run.value("valid", false) ? 1 : 0;
    }
    md << "| " << c.key << " | " << median(c, "prefill_tokens_per_second", 1, "null") << " | "
       << median(c, "decode_tpot_ms", 3, "null") << " | " << median(c, "offline_output_tokens_per_second", 1, "null")
       << " | " << median(c, "server_max_rate_within_bounds", 3, "null") << " | " << valid << " of " << runs << " |\n";
  }
  return md.str();
}

bool any_generation(const Summary& s) {
  for (const auto& c : s.cases)
    for (const auto& r : c.rounds)
      if (r.record("generation")) return true;
  return false;
}

// " (device sim:0, plug-in xpuperf-sim 1.0)": what the first round that names them ran on.
std::string device_words(const Summary& s) {
  for (const auto& c : s.cases)
    for (const auto& r : c.rounds)
      if (!r.device.empty()) return " (device " + r.device + (r.plugin.empty() ? "" : ", plug-in " + r.plugin) + ")";
  return "";
}

std::string training_row(const CaseResult& c) {
  std::ostringstream md;
  md << "| " << c.key << " | " << rounds_ok_text(c) << " | " << c.rounds_converged << " | ";
  if (const Aggregate* t = c.stat("training_samples_per_second")) {
    md << mean_and_spread(*t, 1) << " | ";
    if (t->n < 2)  // one round has no spread and no interval: say so, not "± 0.0"
      md << "– | n = 1 | ";
    else
      md << fixed_digits(100 * t->cv, 2) << " % | " << fixed_digits(t->ci95_low, 1) << " – "
         << fixed_digits(t->ci95_high, 1) << " | ";
    md << (t->olympic_mean ? fixed_digits(*t->olympic_mean, 1) : "") << " | ";
  } else {
    md << " |  |  |  | ";
  }
  if (c.stat("final_metric")) md << c.final_metric_name << " " << median(c, "final_metric", 4);
  const Aggregate* energy = c.stat("energy_per_sample_j");
  md << " | " << median(c, "time_to_target", 1) << " | " << median(c, "e2e_time", 1) << " | "
     << (energy ? fixed_digits(energy->mean, 6) : "") << " |\n";
  return md.str();
}

std::string verdict_text(const OperatorRowStats& r) {
  return !r.checked ? "not checked" : r.accurate ? "yes" : "NO";
}

// A census case (`xpuperf op --census`): the step its calls explain at their mean times over the ok
// rounds, against the step the case measured, and the calls that cost most; "" for other cases.
std::string step_explained(const CaseResult& c, const std::vector<OperatorRowStats>& rows) {
  const json* e = nullptr;
  for (const auto& round : c.rounds)
    if (round.ok() && round.record("explained") && round.record("explained")->is_object())
      e = round.record("explained");
  if (!e) return "";
  const std::string unit = e->value("unit", std::string("step"));
  double explained = 0, warm = 0;
  bool all_warm = !rows.empty();
  std::vector<std::pair<double, const OperatorRowStats*>> cost;
  for (const auto& r : rows) {
    const double per_step = r.last.value("calls_per_step", 0.0) * r.time.mean;
    explained += per_step;
    cost.emplace_back(per_step, &r);
    all_warm = all_warm && r.last.contains("warm_ms");
    warm += r.last.value("calls_per_step", 0.0) * r.last.value("warm_ms", 0.0);
  }
  std::stable_sort(cost.begin(), cost.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::ostringstream md;
  md << "\n"
     << c.key << " (" << e->value("what", std::string("a case")) << "): Σ calls × isolated time "
     << fixed_digits(explained, 3) << " ms a " << unit;
  const double step = e->value("step_ms", 0.0);
  if (step > 0)
    md << ", against " << fixed_digits(step, 3) << " ms measured (" << fixed_digits(100 * explained / step, 1)
       << " % explained)";
  if (all_warm)
    md << "; with warm caches " << fixed_digits(warm, 3) << " ms"
       << (step > 0 ? " (" + fixed_digits(100 * warm / step, 1) + " %)" : "");
  md << ". The costliest calls (ms a " << unit << ", of the measured roof or else the datasheet's):\n\n";
  for (std::size_t i = 0; i < cost.size() && i < 5; ++i) {
    const OperatorRowStats& r = *cost[i].second;
    md << "- " << r.op << " (" << r.shape << "): " << fixed_digits(cost[i].first, 3) << " ms, "
       << fraction_text(r.measured_fraction ? r.measured_fraction : r.datasheet_fraction) << "\n";
  }
  return md.str();
}

// A collective's backend with the algorithm it chose.
std::string implementation_text(const OperatorRowStats& r) {
  const std::string algorithm = r.last.value("algorithm", "");
  return algorithm.empty() ? r.implementation : r.implementation + " (" + algorithm + ")";
}

// GB/s; a collective's algorithm bandwidth with its bus bandwidth, which its roof fractions are of.
std::string bandwidth_text(const OperatorRowStats& r) {
  return fixed_digits(r.gb_per_s, 1) + (r.bus_gb_per_s > 0 ? " (bus " + fixed_digits(r.bus_gb_per_s, 1) + ")" : "");
}

// The operator cases: one line a row, its time over the ok rounds and its place on the roofs.
std::string operator_table(const Summary& s) {
  std::ostringstream md;
  md << "| operator case | operator | shape | dtype | implementation | ms (mean ± std) | TFLOP/s | GB/s | FLOP/byte | "
        "of datasheet | of measured roof | vs aten | J/call | accurate | deterministic |\n"
        "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | --- |\n";
  std::vector<std::string> roofs, failed;
  std::string explained;
  for (const auto& c : s.cases) {
    if (!c.is(CaseFamilyKind::Operation)) continue;
    const Roof measured = measured_roof(s, c.hardware);
    if (!measured.empty() && std::find(roofs.begin(), roofs.end(), measured.source) == roofs.end())
      roofs.push_back(measured.source);
    const std::vector<OperatorRowStats> case_rows = operator_rows(c, measured);
    explained += step_explained(c, case_rows);
    for (const auto& r : case_rows)
      md << "| " << c.key << " | " << r.op << " | " << r.shape << " | " << r.dtype << " | " << implementation_text(r)
         << " | " << mean_and_spread(r.time, 4) << " | " << fixed_digits(r.tflops, 3) << " | " << bandwidth_text(r)
         << " | " << fixed_digits(r.intensity, 2) << " | " << fraction_text(r.datasheet_fraction) << " | "
         << fraction_text(r.measured_fraction) << " | " << speedup_text(r) << " | "
         << (r.energy_per_call_j ? fixed_digits(*r.energy_per_call_j, 6) : "–") << " | " << verdict_text(r) << " | "
         << (r.deterministic ? "yes" : "no") << " |\n";
    for (const auto& round : c.rounds)
      if (const json* rows = round.record("failed_rows"))
        for (const auto& f : *rows)
          failed.push_back(c.key + " round " + std::to_string(round.number) + ": " + f.value("error", ""));
  }
  md << "\n";
  for (const auto& roof : roofs) md << "Measured roof: " << roof << ".\n";
  if (roofs.empty())
    md << "No measured roof: the run has no computation-* or main_memory-bandwidth base case (add a `base:` "
          "section to place the rows on this machine's roofline).\n";
  md << explained;
  if (!failed.empty()) {
    md << "\nOperator rows that did not run:\n\n";
    for (const auto& f : failed) md << "- " << f << "\n";
  }
  md << "\n";
  return md.str();
}

}  // namespace

std::string summary_markdown(const Summary& s) {
  std::ostringstream md;
  md << "# xpuperf " << s.run << "\n\n";
  if (s.source == "flagperf")
    md << "A FlagPerf result tree, read by xpuperf " << s.xpuperf_version;
  else
    md << "Vendor `" << s.vendor << "`" << device_words(s) << ", launcher `" << s.launcher << "`";
  if (s.system.is_object())
    md << "; " << s.system.value("cpu_model", "") << ", " << s.system.value("cpu_cores", 0) << " cores, "
       << s.system.value("os", "");
  md << ".\n\n";
  bool any_base = false, any_training = false, any_inference = false, any_operation = false;
  for (const auto& c : s.cases) {
    const CaseFamilyKind family = c.family_or_training();
    (family == CaseFamilyKind::Base        ? any_base
     : family == CaseFamilyKind::Inference ? any_inference
     : family == CaseFamilyKind::Operation ? any_operation
                                           : any_training) = true;
  }
  if (any_base) md << base_table(s);
  if (any_operation) md << operator_table(s);
  if (any_training)
    md << "| case | rounds ok / run | converged | samples/s (mean ± std) | CV | 95% CI | olympic mean | final metric "
          "(median) | time to target s (median) | e2e s (median) | energy/sample (J) |\n"
       << "| --- | ---: | ---: | ---: | ---: | --- | ---: | --- | ---: | ---: | ---: |\n";
  for (const auto& c : s.cases)
    if (c.is(CaseFamilyKind::Training)) md << training_row(c);
  if (any_inference) md << inference_table(s);
  if (any_generation(s)) md << generation_table(s);
  bool any_failed = false;
  for (const auto& c : s.cases)
    for (const auto& r : c.rounds) {
      if (r.ok()) continue;
      if (!any_failed) md << "\nRounds left out of the statistics:\n\n";
      any_failed = true;
      md << "- " << c.key << " round " << r.number << ": " << r.status << " (" << r.reason << ")\n";
    }
  return md.str();
}

}  // namespace xpuperf::report
