// summary.md: the summary's Markdown (summary.h), its tables by family.

#include <iomanip>
#include <sstream>

#include "xpuperf/core/strings.h"
#include "xpuperf/report/stats.h"
#include "xpuperf/report/summary.h"

namespace xpuperf::report {
using json = nlohmann::json;

std::string rounds_ok_text(const json& c) {
  return std::to_string(c["aggregate"]["rounds_used"].get<int>()) + " / " + std::to_string(c["rounds"].size());
}

std::string mean_and_spread(const json& a, int digits) {
  if (a.value("n", 0) < 2) return fixed_digits(a["mean"].get<double>(), digits) + " (n = 1)";
  return fixed_digits(a["mean"].get<double>(), digits) + " ± " + fixed_digits(a["std"].get<double>(), digits);
}

bool uses_synthetic_data(const json& c) {
  for (const auto& r : c["rounds"])
    if (r.value("data", "").rfind("synthetic", 0) == 0) return true;
  return false;
}

// The hardware figures: one row per base case, the headline's median over ok rounds.
std::string base_table(const json& s) {
  std::ostringstream md;
  md << "| base case | rounds ok / run | figure | value (median) | unit | of datasheet | power (W) | per watt | check "
        "|\n| --- | ---: | --- | ---: | --- | ---: | ---: | ---: | --- |\n";
  for (const auto& c : s["cases"]) {
    if (c.value("family", "") != "base") continue;
    const json& a = c["aggregate"];
    const json* last_ok = nullptr;
    for (const auto& r : c["rounds"])
      if (r["status"] == "ok") last_ok = &r;
    md << "| " << c["case"].get<std::string>() << " | " << rounds_ok_text(c) << " | ";
    if (last_ok && a.contains("value")) {
      const json& r = *last_ok;
      md << r.value("figure", "") << " | " << fixed_digits(a["value"]["median"], 3) << " | " << r.value("unit", "")
         << " | "
         << (r.contains("datasheet_ratio") ? fixed_digits(100 * r["datasheet_ratio"].get<double>(), 1) + " %" : "")
         << " | " << (a.contains("mean_power_w") ? fixed_digits(a["mean_power_w"]["median"], 1) : "") << " | "
         << (a.contains("perf_per_watt")
                 ? fixed_digits(a["perf_per_watt"]["median"], 4) + " " + r.value("perf_per_watt_unit", "")
                 : "")
         << " | " << r.value("check", "") << " |\n";
    } else {
      md << " |  |  |  |  |  |  |\n";
    }
  }
  md << "\n";
  return md.str();
}

// FlagPerf inference's four throughputs and both accuracies per inference case (medians over ok rounds).
std::string inference_table(const json& s) {
  std::ostringstream md;
  md << "\n| inference case | rounds ok / run | validation_whole | validation_core | inference_whole | inference_core "
        "| "
        "accuracy (validation / engine) | batch-1 p99 (ms) |\n| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: "
        "|\n";
  for (const auto& c : s["cases"]) {
    if (c.value("family", "") != "inference") continue;
    const json& a = c["aggregate"];
    auto med = [&a](const char* key, int digits) {
      return a.contains(key) ? fixed_digits(a[key]["median"], digits) : std::string("null");
    };
    md << "| " << c["case"].get<std::string>() << " | " << rounds_ok_text(c) << " | " << med("validation_whole", 1)
       << " | " << med("validation_core", 1) << " | " << med("inference_whole", 1) << " | " << med("inference_core", 1)
       << " | "
       << (uses_synthetic_data(c) ? std::string("synthetic data: none claimed")
                                  : med("validation_accuracy", 4) + " / " + med("inference_accuracy", 4))
       << " | " << med("latency_p99_ms", 3) << " |\n";
  }
  return md.str();
}

// The generating inference cases (llm): prefill, decoding and serving (medians over ok rounds).
std::string generation_table(const json& s) {
  std::ostringstream md;
  md << "\n| generating case | prefill tokens/s | decode TPOT (ms, first run) | Offline output tokens/s | highest "
        "Server rate within the bounds (queries/s) | Server runs valid |\n| --- | ---: | ---: | ---: | ---: | --- |\n";
  for (const auto& c : s["cases"]) {
    if (c.value("family", "") != "inference") continue;
    const json* g = nullptr;
    for (const auto& r : c["rounds"])
      if (r.value("status", "") == "ok" && r.contains("generation")) {
        g = &r["generation"];
        break;
      }
    if (!g) continue;
    const json& a = c["aggregate"];
    auto med = [&a](const char* key, int digits) {
      return a.contains(key) ? fixed_digits(a[key]["median"], digits) : std::string("null");
    };
    int valid = 0, runs = 0;
    for (const auto& run : g->value("server", json::array())) {
      ++runs;
      valid += run.value("valid", false) ? 1 : 0;
    }
    md << "| " << c["case"].get<std::string>() << " | " << med("prefill_tokens_per_second", 1) << " | "
       << med("decode_tpot_ms", 3) << " | " << med("offline_output_tokens_per_second", 1) << " | "
       << med("server_max_rate_within_bounds", 3) << " | " << valid << " of " << runs << " |\n";
  }
  return md.str();
}

bool any_generation(const json& s) {
  for (const auto& c : s["cases"])
    for (const auto& r : c["rounds"])
      if (r.contains("generation")) return true;
  return false;
}

namespace {

// " (device sim:0, plug-in xpuperf-sim 1.0)": what the first round that names them ran on.
std::string device_words(const json& s) {
  for (const auto& c : s["cases"])
    for (const auto& r : c.value("rounds", json::array()))
      if (r.contains("device")) {
        std::string words = " (device " + r["device"].get<std::string>();
        if (r.contains("plugin")) words += ", plug-in " + r["plugin"].get<std::string>();
        return words + ")";
      }
  return "";
}

}  // namespace

std::string summary_markdown(const json& s) {
  std::ostringstream md;
  md << "# xpuperf " << s.value("run", "") << "\n\n";
  if (s.value("source", "") == "flagperf")
    md << "A FlagPerf result tree, read by xpuperf " << s.value("xpuperf_version", "");
  else
    md << "Vendor `" << s["plan"].value("vendor", "") << "`" << device_words(s) << ", launcher `"
       << s["plan"].value("launcher", "") << "`";
  if (s.contains("system"))
    md << "; " << s["system"].value("cpu_model", "") << ", " << s["system"].value("cpu_cores", 0) << " cores, "
       << s["system"].value("os", "");
  md << ".\n\n";
  bool any_base = false, any_training = false, any_inference = false;
  for (const auto& c : s["cases"]) {
    const std::string family = c.value("family", "training");
    (family == "base" ? any_base : family == "inference" ? any_inference : any_training) = true;
  }
  if (any_base) md << base_table(s);
  if (any_training)
    md << "| case | rounds ok / run | converged | samples/s (mean ± std) | CV | 95% CI | olympic mean | final metric "
          "(median) | time to target s (median) | e2e s (median) | energy/sample (J) |\n"
       << "| --- | ---: | ---: | ---: | ---: | --- | ---: | --- | ---: | ---: | ---: |\n";
  for (const auto& c : s["cases"]) {
    if (c.value("family", "training") != "training") continue;
    const json& a = c["aggregate"];
    md << "| " << c["case"].get<std::string>() << " | " << rounds_ok_text(c) << " | "
       << a["rounds_converged"].get<int>() << " | ";
    if (a.contains("training_samples_per_second")) {
      const json& t = a["training_samples_per_second"];
      md << mean_and_spread(t, 1) << " | ";
      if (t.value("n", 0) < 2)  // one round has no spread and no interval: say so, not "± 0.0"
        md << "– | n = 1 | ";
      else
        md << fixed_digits(100 * t["cv"].get<double>(), 2) << " % | " << fixed_digits(t["ci95"][0], 1) << " – "
           << fixed_digits(t["ci95"][1], 1) << " | ";
      md << (t["olympic_mean"].is_null() ? "" : fixed_digits(t["olympic_mean"], 1)) << " | ";
    } else {
      md << " |  |  |  | ";
    }
    if (a.contains("final_metric"))
      md << a.value("final_metric_name", "") << " " << fixed_digits(a["final_metric"]["median"], 4);
    md << " | " << (a.contains("time_to_target") ? fixed_digits(a["time_to_target"]["median"], 1) : "") << " | "
       << (a.contains("e2e_time") ? fixed_digits(a["e2e_time"]["median"], 1) : "") << " | "
       << (a.contains("energy_per_sample_j") ? fixed_digits(a["energy_per_sample_j"]["mean"], 6) : "") << " |\n";
  }
  if (any_inference) md << inference_table(s);
  if (any_generation(s)) md << generation_table(s);
  bool any_failed = false;
  for (const auto& c : s["cases"])
    for (const auto& f : c["failed_rounds"]) {
      if (!any_failed) md << "\nRounds left out of the statistics:\n\n";
      any_failed = true;
      md << "- " << c["case"].get<std::string>() << " round " << f["round"].get<int>() << ": "
         << f["status"].get<std::string>() << " (" << f["reason"].get<std::string>() << ")\n";
    }
  return md.str();
}

}  // namespace xpuperf::report
