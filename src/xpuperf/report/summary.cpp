#include "xpuperf/report/summary.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "xpuperf/core/base_config.h"
#include "xpuperf/core/files.h"
#include "xpuperf/core/inference_config.h"
#include "xpuperf/core/perflog.h"
#include "xpuperf/core/plan.h"
#include "xpuperf/core/version.h"
#include "xpuperf/monitor/analysis.h"
#include "xpuperf/report/chart.h"
#include "xpuperf/report/curves.h"
#include "xpuperf/report/html.h"
#include "xpuperf/report/stats.h"
#include "xpuperf/report/summary_csv.h"

namespace xpuperf::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<fs::path> sorted_dirs(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

namespace {

// A file the run wrote, read back: each key present must have the type its writer gives it
// ('s' string, 'n' number). An edited or damaged file is named with the key, not a crash.
json checked_types(json j, const std::string& path, std::initializer_list<std::pair<const char*, char>> fields) {
  if (!j.is_object()) throw std::runtime_error(path + ": not a JSON object (edited or damaged?)");
  for (const auto& [key, type] : fields) {
    if (!j.contains(key)) continue;
    const bool ok = type == 's' ? j[key].is_string() : j[key].is_number();
    if (!ok)
      throw std::runtime_error(path + ": '" + key + "' must be a " + (type == 's' ? "string" : "number") + ", got " +
                               j[key].dump() + " (edited or damaged? run the round again, or fix the file)");
  }
  return j;
}

}  // namespace

std::set<std::string> accelerators_charged(const std::vector<std::string>& monitor_files, int nproc) {
  std::set<std::string> devices;
  for (const auto& file : monitor_files) {
    const auto status = read_json_file((fs::path(file).parent_path() / "node_status.json").string());
    if (status && status->is_object() && status->contains("devices") && (*status)["devices"].is_array())
      for (const auto& d : (*status)["devices"])
        if (d.is_string()) devices.insert(d.get<std::string>());
  }
  return devices.empty() ? monitor::accelerators_of_round(nproc) : devices;
}

namespace {

// A generating inference case's step (h): the whole record, and its headlines as round figures.
void add_generation_figures(json& r, const json& g) {
  r["generation"] = g;
  if (g.contains("prefill_tokens_per_sample") && r.contains("inference_core"))
    r["prefill_tokens_per_second"] = r["inference_core"].get<double>() * g["prefill_tokens_per_sample"].get<double>();
  if (g.contains("decode") && !g["decode"].empty()) r["decode_tpot_ms"] = g["decode"][0]["tpot_ms"];
  if (g.contains("offline")) r["offline_output_tokens_per_second"] = g["offline"]["output_tokens_per_second"];
  if (g.contains("server_max_rate_within_bounds"))
    r["server_max_rate_within_bounds"] = g["server_max_rate_within_bounds"];
}

// A base case's figures (FINISHED of `xpuperf base`): the headline (the first figure) as
// value/unit with its datasheet ratio, every figure, the check, and the power drawn during the
// measured window with the headline per watt.
void add_base_figures(json& r, const json& extra, const std::vector<std::string>& monitor_files,
                      const std::set<std::string>& accelerators) {
  const json& head = extra["figures"][0];
  r["figures"] = extra["figures"];
  r["figure"] = head.value("name", "");
  r["value"] = head.value("value", 0.0);
  r["unit"] = head.value("unit", "");
  if (head.contains("ratio")) r["datasheet_ratio"] = head["ratio"];
  r["correct"] = extra.value("correct", true);
  r["check"] = extra.value("check", "");
  r["implementation"] = extra.value("implementation", "");
  const double t0 = extra.value("started_unix", 0.0), t1 = extra.value("ended_unix", 0.0);
  if (monitor_files.empty() || t0 <= 0 || t1 < t0) return;
  const double watts = monitor::mean_power_in_window(monitor_files, t0, t1, accelerators);
  if (watts <= 0) return;
  r["mean_power_w"] = watts;
  // Per watt only for rates (TFLOP/s, GB/s): a latency or a size per watt means nothing.
  if (r["unit"].get<std::string>().find("/s") == std::string::npos) return;
  r["perf_per_watt"] = r["value"].get<double>() / watts;
  r["perf_per_watt_unit"] = r["unit"].get<std::string>() + "/W";
}

// One round's figures, from its folder.
json round_figures(const fs::path& round_dir, int round, int nproc) {
  json r = {{"round", round}};
  std::optional<FinishedInfo> finished;
  std::vector<std::string> monitor_files;
  std::optional<TrainingCurves> curves;  // from the first log with steps or evaluations: the leader's
  for (const auto& node : sorted_dirs(round_dir, "")) {
    if (node.filename().string().find("_noderank") == std::string::npos) continue;
    if (fs::exists(node / "monitor.csv")) monitor_files.push_back((node / "monitor.csv").string());
    std::vector<fs::path> logs;
    for (const auto& entry : fs::directory_iterator(node)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("rank", 0) == 0 && name.find(".out.log") != std::string::npos) logs.push_back(entry.path());
    }
    std::sort(logs.begin(), logs.end(), [](const fs::path& a, const fs::path& b) {
      return std::atoi(a.filename().string().c_str() + 4) < std::atoi(b.filename().string().c_str() + 4);
    });
    for (const auto& log : logs) {
      std::ifstream in(log);
      const auto events = parse_perflog(in).events;
      for (const auto& e : events) {
        if (e.event == perflog_event::kFinished) finished = FinishedInfo::from_json(e.value);
        // The device the round ran on and the vendor plug-in that brought it (the leader's).
        if (e.event == perflog_event::kSubmitInfo && e.value.is_object() && !r.contains("device")) {
          if (e.value.contains("device") && e.value["device"].is_string()) r["device"] = e.value["device"];
          if (e.value.contains("plugin") && e.value["plugin"].is_string()) r["plugin"] = e.value["plugin"];
        }
      }
      if (!curves) {
        TrainingCurves c = training_curves(events);
        if (!c.empty()) curves = std::move(c);
      }
    }
  }
  const std::set<std::string> accelerators = accelerators_charged(monitor_files, nproc);
  const std::string status_path = (round_dir / "round_status.json").string();
  auto status = read_json_file(status_path);
  if (status) status = checked_types(*status, status_path, {{"status", 's'}, {"reason", 's'}});
  json extra = finished ? finished->extra : json::object();
  if (status && status->contains("status")) {
    r["status"] = (*status)["status"];
    r["reason"] = status->value("reason", "");
    if (r["status"] == "ok" && !finished) {  // the controller saw one; the logs no longer have it
      r["status"] = "failed";
      r["reason"] = status_path + " says ok, but no rank log has a FINISHED event (a log cut short or edited?)";
    }
  } else {
    r["status"] = finished ? "ok" : "failed";
    r["reason"] = finished ? "" : "no FINISHED event in the rank logs (and no round_status.json)";
  }
  if (finished) {
    const FinishedInfo& f = *finished;
    auto put = [&r](const char* key, const auto& value) {
      if (value) r[key] = *value;
    };
    put("training_samples_per_second", f.training_samples_per_second);
    put("e2e_time", f.e2e_time);
    put("init_time", f.init_time);
    put("raw_train_time", f.raw_train_time);
    put("converged", f.converged);
    put("global_steps", f.global_steps);
    put("num_trained_samples", f.num_trained_samples);
    put("mfu", f.mfu);
    if (f.final_metric) {
      r["final_metric"] = f.final_metric->value;
      r["final_metric_name"] = f.final_metric->name;
      if (f.final_metric->target) r["final_metric_target"] = *f.final_metric->target;
    }
  }
  // MFU: the model FLOPs the ranks did per second over what the chips could do at the run's
  // precision (its own peak where the datasheet lists it, else fp32's or fp16's), from the chip's
  // datasheet figures the controller put into round_status.json.
  if (!r.contains("mfu") && status && status->contains("monitor") && extra.contains("train_flops_per_sample") &&
      r.contains("training_samples_per_second")) {
    const json& m = (*status)["monitor"];
    // The precision the matmuls ran in; result trees from before `precision` say mixed_precision.
    std::string precision = extra.value("precision", "");
    if (precision.empty()) precision = extra.value("mixed_precision", "off") == "off" ? "fp32" : "fp16";
    std::string peak_key = precision + "_peak_tflops";
    if (!m.contains(peak_key))
      peak_key = precision == "fp32" || precision == "tf32" ? "fp32_peak_tflops" : "fp16_peak_tflops";
    const double world = extra.value("world_size", 1);
    if (m.contains(peak_key) && m[peak_key].get<double>() > 0)
      r["mfu"] = extra["train_flops_per_sample"].get<double>() * r["training_samples_per_second"].get<double>() /
                 (m[peak_key].get<double>() * 1e12 * world);
  }
  if (curves && !extra.contains("figures") && !extra.contains("steps")) {  // a training round
    r["curves"] = curves->to_json();
    if (curves->target_hit) {
      r["time_to_target"] = curves->target_hit->seconds;
      r["steps_to_target"] = curves->target_hit->step;
    }
  }
  if (extra.contains("figures") && extra["figures"].is_array() && !extra["figures"].empty())
    add_base_figures(r, extra, monitor_files, accelerators);
  if (extra.contains("steps")) {  // an inference case (the figures of FlagPerf's inference framework)
    for (const char* key :
         {"validation_whole", "validation_core", "inference_whole", "inference_core", "validation_accuracy",
          "inference_accuracy", "mfu", "foo_time", "engine", "steps", "latency", "max_abs_diff_vs_validation",
          "relative_diff_vs_validation", "top1_agreement_vs_validation", "caveat", "samples", "data"})
      if (extra.contains(key) && !extra[key].is_null()) r[key] = extra[key];
    if (extra.contains("latency") && !extra["latency"].empty()) r["latency_p99_ms"] = extra["latency"][0]["p99_ms"];
    if (extra.contains("generation") && extra["generation"].is_object()) add_generation_figures(r, extra["generation"]);
  }
  if (!monitor_files.empty()) {
    const auto a = monitor::analyse_monitor_csv(monitor_files, accelerators);
    if (a.round_energy_j() > 0) {
      r["energy_j"] = a.round_energy_j();
      if (r.contains("num_trained_samples") && r["num_trained_samples"].get<double>() > 0)
        r["energy_per_sample_j"] = a.round_energy_j() / r["num_trained_samples"].get<double>();
    }
    if (a.peak_host_mem_bytes > 0) r["peak_host_mem_bytes"] = a.peak_host_mem_bytes;
    if (a.peak_device_mem_bytes > 0) r["peak_device_mem_bytes"] = a.peak_device_mem_bytes;
  }
  return r;
}

}  // namespace

const std::vector<const char*>& aggregated_figures() {
  static const std::vector<const char*> figures = {"training_samples_per_second",
                                                   "e2e_time",
                                                   "time_to_target",
                                                   "init_time",
                                                   "raw_train_time",
                                                   "final_metric",
                                                   "energy_j",
                                                   "energy_per_sample_j",
                                                   "peak_host_mem_bytes",
                                                   "peak_device_mem_bytes",
                                                   "mfu",
                                                   "value",
                                                   "mean_power_w",
                                                   "perf_per_watt",
                                                   "validation_whole",
                                                   "validation_core",
                                                   "inference_whole",
                                                   "inference_core",
                                                   "validation_accuracy",
                                                   "inference_accuracy",
                                                   "latency_p99_ms",
                                                   "prefill_tokens_per_second",
                                                   "decode_tpot_ms",
                                                   "offline_output_tokens_per_second",
                                                   "server_max_rate_within_bounds"};
  return figures;
}

namespace {

json plan_summary(const fs::path& run, const Plan& plan) {
  json summary = {{"schema", kSummarySchema},
                  {"xpuperf_version", kVersion},
                  {"run", run.filename().string()},
                  {"plan", {{"vendor", plan.vendor}, {"launcher", plan.launcher}, {"hosts", plan.hosts}}},
                  {"cases", json::array()}};
  bool have_system = false;
  for (const auto& c : plan.cases) {
    const fs::path case_dir = run / c.key.dir_name();
    const bool base = is_base_key(c.key), inference = is_inference_key(c.key);
    json entry = {{"case", base        ? base_key_text(c.key)
                           : inference ? inference_key_text(c.key)
                                       : c.key.str()},
                  {"family", base        ? "base"
                             : inference ? "inference"
                                         : "training"},
                  {"dir", c.key.dir_name()},
                  {"model", c.key.model},
                  {"framework", c.key.framework},
                  {"hardware", c.key.hardware},
                  {"nnodes", c.key.nnodes},
                  {"nproc", c.key.nproc},
                  {"rounds_planned", c.key.repeat},
                  {"rounds", json::array()},
                  {"failed_rounds", json::array()}};
    for (int round = 1; round <= c.key.repeat; ++round) {
      const fs::path round_dir = case_dir / ("round" + std::to_string(round));
      if (!fs::exists(round_dir)) continue;  // not run (interrupted plan)
      json r = round_figures(round_dir, round, c.key.nproc);
      entry["rounds"].push_back(r);
      if (r["status"] != "ok")
        entry["failed_rounds"].push_back({{"round", round}, {"status", r["status"]}, {"reason", r["reason"]}});
      if (!have_system) {
        for (const auto& node : sorted_dirs(round_dir, ""))
          if (auto sys = read_json_file((node / "sys_info.json").string())) {
            summary["system"] = checked_types(*sys, (node / "sys_info.json").string(),
                                              {{"hostname", 's'},
                                               {"os", 's'},
                                               {"kernel", 's'},
                                               {"machine", 's'},
                                               {"cpu_model", 's'},
                                               {"cpu_cores", 'n'},
                                               {"memory_bytes", 'n'}});
            have_system = true;
            break;
          }
      }
    }
    summary["cases"].push_back(entry);
  }
  return summary;
}

// Statistics over a case's ok rounds; failed rounds are listed, not averaged.
json aggregate_case(const json& entry) {
  json agg = json::object();
  std::size_t used = 0, converged = 0;
  for (const char* key : aggregated_figures()) {
    std::vector<double> values;
    for (const auto& r : entry["rounds"])
      if (r["status"] == "ok" && r.contains(key) && r[key].is_number()) values.push_back(r[key].get<double>());
    if (!values.empty()) agg[key] = aggregate(values).to_json();
  }
  for (const auto& r : entry["rounds"]) {
    if (r["status"] != "ok") continue;
    ++used;
    if (r.value("converged", false)) ++converged;
  }
  agg["rounds_used"] = used;
  agg["rounds_converged"] = converged;
  if (!entry["rounds"].empty() && entry["rounds"][0].contains("final_metric_name"))
    agg["final_metric_name"] = entry["rounds"][0]["final_metric_name"];
  return agg;
}

// A FlagPerf result tree: run<ts>/<case>/round<N>/<host>_noderank<i>/rank<k>.out.log.
bool is_flagperf_tree(const fs::path& run) {
  for (const auto& c : sorted_dirs(run, ""))
    if (!sorted_dirs(c, "round").empty()) return true;
  return false;
}

json flagperf_summary(const fs::path& run) {
  json summary = {{"schema", kSummarySchema},
                  {"xpuperf_version", kVersion},
                  {"run", run.filename().string()},
                  {"source", "flagperf"},
                  {"plan", {{"vendor", ""}, {"launcher", "flagperf"}, {"hosts", json::array()}}},
                  {"cases", json::array()}};
  for (const auto& c : sorted_dirs(run, "")) {
    const auto rounds = sorted_dirs(c, "round");
    if (rounds.empty()) continue;
    json entry = {{"case", c.filename().string()},
                  {"rounds_planned", rounds.size()},
                  {"rounds", json::array()},
                  {"failed_rounds", json::array()}};
    for (const auto& round_dir : rounds) {
      const int round = std::atoi(round_dir.filename().string().c_str() + 5);
      json r = round_figures(round_dir, round, 0 /* unknown: every accelerator */);
      entry["rounds"].push_back(r);
      if (r["status"] != "ok")
        entry["failed_rounds"].push_back({{"round", round}, {"status", r["status"]}, {"reason", r["reason"]}});
    }
    summary["cases"].push_back(entry);
  }
  return summary;
}

}  // namespace

json build_summary(const std::string& run_dir) {
  const fs::path run(run_dir);
  std::error_code ec;
  json summary;
  if (!fs::exists(run / "plan.yaml", ec)) {
    if (!is_flagperf_tree(run))
      throw std::runtime_error(run_dir +
                               " is not a run folder (no plan.yaml, and no FlagPerf <case>/round<N> folders)");
    summary = flagperf_summary(run);
  } else {
    Diagnostics diags;
    const auto text = read_text_file((run / "plan.yaml").string(), diags);
    const auto plan = text ? load_plan_text(*text, (run / "plan.yaml").string(), diags) : std::nullopt;
    if (!plan) throw std::runtime_error((run / "plan.yaml").string() + " cannot be read:\n" + diags.format());
    summary = plan_summary(run, *plan);
  }
  for (auto& entry : summary["cases"]) entry["aggregate"] = aggregate_case(entry);
  return summary;
}

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

std::string write_summary(const std::string& run_dir, json* summary_out) {
  const json summary = build_summary(run_dir);
  if (summary_out) *summary_out = summary;
  write_json_file(run_dir + "/summary.json", summary);
  const std::string md = summary_markdown(summary);
  write_text_file(run_dir + "/summary.md", md);
  write_text_file(run_dir + "/summary.csv", summary_csv(summary));
  write_text_file(run_dir + "/report.html", report_html(summary, run_dir));
  return md;
}

}  // namespace xpuperf::report
