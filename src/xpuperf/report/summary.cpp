#include "xpuperf/report/summary.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "xpuperf/core/case_family.h"
#include "xpuperf/core/files.h"
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

// What a round's node folders hold: the FINISHED event, the monitors' files and the leader's curves.
struct RoundLogs {
  std::optional<FinishedInfo> finished;
  std::vector<std::string> monitor_files;
  std::optional<TrainingCurves> curves;  // from the first log with steps or evaluations: the leader's
};

// Reads the rank logs of every node, in rank order; the leader's device and plug-in go into `r`.
RoundLogs read_round_logs(const fs::path& round_dir, json& r) {
  RoundLogs out;
  for (const auto& node : sorted_dirs(round_dir, "")) {
    if (node.filename().string().find("_noderank") == std::string::npos) continue;
    if (fs::exists(node / "monitor.csv")) out.monitor_files.push_back((node / "monitor.csv").string());
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
        if (e.event == perflog_event::kFinished) out.finished = FinishedInfo::from_json(e.value);
        // The device the round ran on and the vendor plug-in that brought it (the leader's).
        if (e.event == perflog_event::kSubmitInfo && e.value.is_object() && !r.contains("device")) {
          if (e.value.contains("device") && e.value["device"].is_string()) r["device"] = e.value["device"];
          if (e.value.contains("plugin") && e.value["plugin"].is_string()) r["plugin"] = e.value["plugin"];
        }
      }
      if (!out.curves) {
        TrainingCurves c = training_curves(events);
        if (!c.empty()) out.curves = std::move(c);
      }
    }
  }
  return out;
}

// The round's status and reason: round_status.json's, checked against the logs, else the logs'.
// round_status.json itself, where it could be read.
std::optional<json> put_round_status(json& r, const fs::path& round_dir, bool finished) {
  const std::string status_path = (round_dir / "round_status.json").string();
  auto status = read_json_file(status_path);
  if (status) status = checked_types(*status, status_path, {{"status", 's'}, {"reason", 's'}});
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
  return status;
}

void put_finished_figures(json& r, const FinishedInfo& f) {
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
void put_mfu(json& r, const std::optional<json>& status, const json& extra) {
  if (r.contains("mfu") || !status || !status->contains("monitor") || !extra.contains("train_flops_per_sample") ||
      !r.contains("training_samples_per_second"))
    return;
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

// An inference case's figures (those of FlagPerf's inference framework).
void put_inference_figures(json& r, const json& extra) {
  for (const char* key :
       {"validation_whole", "validation_core", "inference_whole", "inference_core", "validation_accuracy",
        "inference_accuracy", "mfu", "foo_time", "engine", "steps", "latency", "max_abs_diff_vs_validation",
        "relative_diff_vs_validation", "top1_agreement_vs_validation", "caveat", "samples", "data"})
    if (extra.contains(key) && !extra[key].is_null()) r[key] = extra[key];
  if (extra.contains("latency") && !extra["latency"].empty()) r["latency_p99_ms"] = extra["latency"][0]["p99_ms"];
  if (extra.contains("generation") && extra["generation"].is_object()) add_generation_figures(r, extra["generation"]);
}

void put_monitor_figures(json& r, const std::vector<std::string>& monitor_files,
                         const std::set<std::string>& accelerators) {
  const auto a = monitor::analyse_monitor_csv(monitor_files, accelerators);
  if (a.round_energy_j() > 0) {
    r["energy_j"] = a.round_energy_j();
    if (r.contains("num_trained_samples") && r["num_trained_samples"].get<double>() > 0)
      r["energy_per_sample_j"] = a.round_energy_j() / r["num_trained_samples"].get<double>();
  }
  if (a.peak_host_mem_bytes > 0) r["peak_host_mem_bytes"] = a.peak_host_mem_bytes;
  if (a.peak_device_mem_bytes > 0) r["peak_device_mem_bytes"] = a.peak_device_mem_bytes;
}

// One round's figures, from its folder.
json round_figures(const fs::path& round_dir, int round, int nproc) {
  json r = {{"round", round}};
  const RoundLogs logs = read_round_logs(round_dir, r);
  const std::set<std::string> accelerators = accelerators_charged(logs.monitor_files, nproc);
  const std::optional<json> status = put_round_status(r, round_dir, logs.finished.has_value());
  const json extra = logs.finished ? logs.finished->extra : json::object();
  if (logs.finished) put_finished_figures(r, *logs.finished);
  put_mfu(r, status, extra);
  if (logs.curves && !extra.contains("figures") && !extra.contains("steps")) {  // a training round
    r["curves"] = logs.curves->to_json();
    if (logs.curves->target_hit) {
      r["time_to_target"] = logs.curves->target_hit->seconds;
      r["steps_to_target"] = logs.curves->target_hit->step;
    }
  }
  if (extra.contains("figures") && extra["figures"].is_array() && !extra["figures"].empty())
    add_base_figures(r, extra, logs.monitor_files, accelerators);
  if (extra.contains("steps")) put_inference_figures(r, extra);
  if (!logs.monitor_files.empty()) put_monitor_figures(r, logs.monitor_files, accelerators);
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
    const CaseFamily& family = case_family(c.key);
    const bool base = family.name() == std::string("base");
    json entry = {{"case", family.key_text(c.key)}, {"family", family.name()},       {"dir", c.key.dir_name()},
                  {"model", c.key.model},           {"framework", c.key.framework},  {"hardware", c.key.hardware},
                  {"nnodes", c.key.nnodes},         {"nproc", c.key.nproc},          {"rounds_planned", c.key.repeat},
                  {"rounds", json::array()},        {"failed_rounds", json::array()}};
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
