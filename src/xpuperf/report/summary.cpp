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
#include "xpuperf/report/curves.h"
#include "xpuperf/report/serving_report.h"
#include "xpuperf/report/stats.h"

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

void put_figure(Round& r, const char* name, const json& value) {
  if (value.is_number()) r.figures[name] = value.get<double>();
}

// A generating inference case's step (h): the whole record, and its headlines as round figures.
void add_generation_figures(Round& r, const json& g) {
  r.records["generation"] = g;
  const double* core = r.find("inference_core");
  if (g.contains("prefill_tokens_per_sample") && g["prefill_tokens_per_sample"].is_number() && core)
    r.figures["prefill_tokens_per_second"] = *core * g["prefill_tokens_per_sample"].get<double>();
  if (g.contains("decode") && g["decode"].is_array() && !g["decode"].empty() && g["decode"][0].is_object())
    put_figure(r, "decode_tpot_ms", g["decode"][0].value("tpot_ms", json()));
  if (g.contains("offline") && g["offline"].is_object())
    put_figure(r, "offline_output_tokens_per_second", g["offline"].value("output_tokens_per_second", json()));
  if (g.contains("server_max_rate_within_bounds"))
    put_figure(r, "server_max_rate_within_bounds", g["server_max_rate_within_bounds"]);
}

// A base case's figures (FINISHED of `xpuperf base`): the headline (the first figure) as
// value/unit with its datasheet ratio, every figure, the check, and the power drawn during the
// measured window with the headline per watt.
void add_base_figures(Round& r, const json& extra, const std::vector<std::string>& monitor_files,
                      const std::set<std::string>& accelerators) {
  const json& head = extra["figures"][0];
  r.records["figures"] = extra["figures"];
  r.figure = head.value("name", "");
  r.figures["value"] = head.value("value", 0.0);
  r.unit = head.value("unit", "");
  if (head.contains("ratio") && head["ratio"].is_number()) r.datasheet_ratio = head["ratio"].get<double>();
  r.correct = extra.value("correct", true);
  r.check = extra.value("check", "");
  r.implementation = extra.value("implementation", "");
  const double t0 = extra.value("started_unix", 0.0), t1 = extra.value("ended_unix", 0.0);
  if (monitor_files.empty() || t0 <= 0 || t1 < t0) return;
  const double watts = monitor::mean_power_in_window(monitor_files, t0, t1, accelerators);
  if (watts <= 0) return;
  r.figures["mean_power_w"] = watts;
  // Per watt only for rates (TFLOP/s, GB/s): a latency or a size per watt means nothing.
  if (r.unit->find("/s") == std::string::npos) return;
  r.figures["perf_per_watt"] = r.figures["value"] / watts;
  r.perf_per_watt_unit = *r.unit + "/W";
}

// What a round's node folders hold: the FINISHED event, the monitors' files and the leader's curves.
struct RoundLogs {
  std::optional<FinishedInfo> finished;
  std::vector<std::string> monitor_files;
  std::optional<TrainingCurves> curves;  // from the first log with steps or evaluations: the leader's
};

// Reads the rank logs of every node, in rank order; the leader's device and plug-in go into `r`.
RoundLogs read_round_logs(const fs::path& round_dir, Round& r) {
  RoundLogs out;
  bool named_device = false;
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
        if (e.event == perflog_event::kSubmitInfo && e.value.is_object() && !named_device &&
            e.value.contains("device") && e.value["device"].is_string()) {
          named_device = true;
          r.device = e.value["device"].get<std::string>();
          if (e.value.contains("plugin") && e.value["plugin"].is_string())
            r.plugin = e.value["plugin"].get<std::string>();
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
std::optional<json> put_round_status(Round& r, const fs::path& round_dir, bool finished) {
  const std::string status_path = (round_dir / "round_status.json").string();
  auto status = read_json_file(status_path);
  if (status) status = checked_types(*status, status_path, {{"status", 's'}, {"reason", 's'}});
  if (status && status->contains("status")) {
    r.status = (*status)["status"].get<std::string>();
    r.reason = status->value("reason", "");
    if (r.ok() && !finished) {  // the controller saw one; the logs no longer have it
      r.status = "failed";
      r.reason = status_path + " says ok, but no rank log has a FINISHED event (a log cut short or edited?)";
    }
  } else {
    r.status = finished ? "ok" : "failed";
    r.reason = finished ? "" : "no FINISHED event in the rank logs (and no round_status.json)";
  }
  return status;
}

void put_finished_figures(Round& r, const FinishedInfo& f) {
  auto put = [&r](const char* key, const std::optional<double>& value) {
    if (value) r.figures[key] = *value;
  };
  put("training_samples_per_second", f.training_samples_per_second);
  put("e2e_time", f.e2e_time);
  put("init_time", f.init_time);
  put("raw_train_time", f.raw_train_time);
  put("mfu", f.mfu);
  r.converged = f.converged;
  r.global_steps = f.global_steps;
  r.num_trained_samples = f.num_trained_samples;
  if (f.final_metric) {
    r.figures["final_metric"] = f.final_metric->value;
    r.final_metric_name = f.final_metric->name;
    r.final_metric_target = f.final_metric->target;
  }
}

// MFU: the model FLOPs the ranks did per second over what the chips could do at the run's
// precision (its own peak where the datasheet lists it, else fp32's or fp16's), from the chip's
// datasheet figures the controller put into round_status.json.
void put_mfu(Round& r, const std::optional<json>& status, const json& extra) {
  const double* rate = r.find("training_samples_per_second");
  if (r.find("mfu") || !status || !status->contains("monitor") || !extra.contains("train_flops_per_sample") || !rate)
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
    r.figures["mfu"] =
        extra["train_flops_per_sample"].get<double>() * *rate / (m[peak_key].get<double>() * 1e12 * world);
}

// An inference case's figures (those of FlagPerf's inference framework); its records as written.
void put_inference_figures(Round& r, const json& extra) {
  const std::set<std::string> figures(aggregated_figures().begin(), aggregated_figures().end());
  for (const char* key :
       {"validation_whole", "validation_core", "inference_whole", "inference_core", "validation_accuracy",
        "inference_accuracy", "mfu", "foo_time", "engine", "steps", "latency", "max_abs_diff_vs_validation",
        "relative_diff_vs_validation", "top1_agreement_vs_validation", "caveat", "samples", "data"}) {
    if (!extra.contains(key) || extra[key].is_null()) continue;
    const json& v = extra[key];
    if (figures.count(key) && v.is_number())
      r.figures[key] = v.get<double>();
    else if (std::string(key) == "data" && v.is_string())
      r.data = v.get<std::string>();
    else if (std::string(key) == "caveat" && v.is_string())
      r.caveat = v.get<std::string>();
    else
      r.records[key] = v;
  }
  if (extra.contains("latency") && extra["latency"].is_array() && !extra["latency"].empty() &&
      extra["latency"][0].is_object())
    put_figure(r, "latency_p99_ms", extra["latency"][0].value("p99_ms", json()));
  if (extra.contains("generation") && extra["generation"].is_object()) add_generation_figures(r, extra["generation"]);
}

// An operator case's rows as written, each with its energy per call where the monitor saw the
// device's power over the row's timed window: the mean power × the median time of a call (the
// window also holds the cache flush between calls, whose power is counted as the call's).
void put_operator_rows(Round& r, const json& extra, const std::vector<std::string>& monitor_files,
                       const std::set<std::string>& accelerators) {
  json rows = extra["rows"].is_array() ? extra["rows"] : json::array();
  for (auto& row : rows) {
    if (!row.is_object()) continue;
    const double t0 = row.value("started_unix", 0.0), t1 = row.value("ended_unix", 0.0);
    if (monitor_files.empty() || t0 <= 0 || t1 <= t0) continue;
    const double watts = monitor::mean_power_in_window(monitor_files, t0, t1, accelerators);
    if (watts > 0) {
      row["mean_power_w"] = watts;
      row["energy_per_call_j"] = watts * row.value("median_ms", 0.0) * 1e-3;
    }
  }
  r.records["operators"] = rows;
  if (extra.contains("failed_rows") && extra["failed_rows"].is_array() && !extra["failed_rows"].empty())
    r.records["failed_rows"] = extra["failed_rows"];
  if (extra.contains("datasheet_roof")) r.records["datasheet_roof"] = extra["datasheet_roof"];
  if (extra.contains("explained")) r.records["explained"] = extra["explained"];  // a census case's
}

void put_monitor_figures(Round& r, const std::vector<std::string>& monitor_files,
                         const std::set<std::string>& accelerators) {
  const auto a = monitor::analyse_monitor_csv(monitor_files, accelerators);
  if (a.round_energy_j() > 0) {
    r.figures["energy_j"] = a.round_energy_j();
    if (r.num_trained_samples && *r.num_trained_samples > 0)
      r.figures["energy_per_sample_j"] = a.round_energy_j() / static_cast<double>(*r.num_trained_samples);
  }
  if (a.peak_host_mem_bytes > 0) r.figures["peak_host_mem_bytes"] = a.peak_host_mem_bytes;
  if (a.peak_device_mem_bytes > 0) r.figures["peak_device_mem_bytes"] = a.peak_device_mem_bytes;
}

// One round's figures, from its folder.
Round round_figures(const fs::path& round_dir, int round, int nproc) {
  Round r;
  r.number = round;
  const RoundLogs logs = read_round_logs(round_dir, r);
  const std::set<std::string> accelerators = accelerators_charged(logs.monitor_files, nproc);
  const std::optional<json> status = put_round_status(r, round_dir, logs.finished.has_value());
  const json extra = logs.finished ? logs.finished->extra : json::object();
  if (logs.finished) put_finished_figures(r, *logs.finished);
  put_mfu(r, status, extra);
  if (logs.curves && !extra.contains("figures") && !extra.contains("steps")) {  // a training round
    r.records["curves"] = logs.curves->to_json();
    if (logs.curves->target_hit) {
      r.figures["time_to_target"] = logs.curves->target_hit->seconds;
      r.steps_to_target = logs.curves->target_hit->step;
    }
  }
  if (extra.contains("figures") && extra["figures"].is_array() && !extra["figures"].empty())
    add_base_figures(r, extra, logs.monitor_files, accelerators);
  if (extra.contains("steps")) put_inference_figures(r, extra);
  if (r.records.contains("generation")) put_sweep_energy(r.records["generation"], logs.monitor_files, accelerators);
  if (extra.contains("operator") && extra.contains("rows"))
    put_operator_rows(r, extra, logs.monitor_files, accelerators);
  if (!logs.monitor_files.empty()) put_monitor_figures(r, logs.monitor_files, accelerators);
  return r;
}

CaseFamilyKind family_kind(const CaseFamily& family) {
  const std::string name = family.name();
  return name == "base"        ? CaseFamilyKind::Base
         : name == "inference" ? CaseFamilyKind::Inference
         : name == "operation" ? CaseFamilyKind::Operation
                               : CaseFamilyKind::Training;
}

// sys_info.json of the first node of `round_dir` that wrote one; null when none did.
json system_of(const fs::path& round_dir) {
  for (const auto& node : sorted_dirs(round_dir, ""))
    if (auto sys = read_json_file((node / "sys_info.json").string()))
      return checked_types(*sys, (node / "sys_info.json").string(),
                           {{"hostname", 's'},
                            {"os", 's'},
                            {"kernel", 's'},
                            {"machine", 's'},
                            {"cpu_model", 's'},
                            {"cpu_cores", 'n'},
                            {"memory_bytes", 'n'}});
  return nullptr;
}

Summary plan_summary(const fs::path& run, const Plan& plan) {
  Summary summary;
  summary.xpuperf_version = kVersion;
  summary.run = run.filename().string();
  summary.vendor = plan.vendor;
  summary.launcher = plan.launcher;
  summary.hosts = plan.hosts;
  for (const auto& c : plan.cases) {
    const fs::path case_dir = run / c.key.dir_name();
    const CaseFamily& family = case_family(c.key);
    CaseResult entry;
    entry.key = family.key_text(c.key);
    entry.family = family_kind(family);
    entry.dir = c.key.dir_name();
    entry.model = c.key.model;
    entry.framework = c.key.framework;
    entry.hardware = c.key.hardware;
    entry.nnodes = c.key.nnodes;
    entry.nproc = c.key.nproc;
    entry.rounds_planned = c.key.repeat;
    for (int round = 1; round <= c.key.repeat; ++round) {
      const fs::path round_dir = case_dir / ("round" + std::to_string(round));
      if (!fs::exists(round_dir)) continue;  // not run (interrupted plan)
      entry.rounds.push_back(round_figures(round_dir, round, c.key.nproc));
      if (summary.system.is_null()) summary.system = system_of(round_dir);
    }
    summary.cases.push_back(std::move(entry));
  }
  return summary;
}

// Statistics over a case's ok rounds; failed rounds are listed, not averaged.
void aggregate_case(CaseResult& entry) {
  for (const char* key : aggregated_figures()) {
    std::vector<double> values;
    for (const auto& r : entry.rounds)
      if (const double* v = r.ok() ? r.find(key) : nullptr) values.push_back(*v);
    if (!values.empty()) entry.aggregate[key] = aggregate(values);
  }
  for (const auto& r : entry.rounds) {
    if (!r.ok()) continue;
    ++entry.rounds_used;
    if (r.converged.value_or(false)) ++entry.rounds_converged;
  }
  if (!entry.rounds.empty() && entry.rounds[0].final_metric_name)
    entry.final_metric_name = *entry.rounds[0].final_metric_name;
}

// A FlagPerf result tree: run<ts>/<case>/round<N>/<host>_noderank<i>/rank<k>.out.log.
bool is_flagperf_tree(const fs::path& run) {
  for (const auto& c : sorted_dirs(run, ""))
    if (!sorted_dirs(c, "round").empty()) return true;
  return false;
}

Summary flagperf_summary(const fs::path& run) {
  Summary summary;
  summary.xpuperf_version = kVersion;
  summary.run = run.filename().string();
  summary.source = "flagperf";
  summary.launcher = "flagperf";
  for (const auto& c : sorted_dirs(run, "")) {
    const auto rounds = sorted_dirs(c, "round");
    if (rounds.empty()) continue;
    CaseResult entry;
    entry.key = c.filename().string();
    entry.rounds_planned = static_cast<int>(rounds.size());
    for (const auto& round_dir : rounds) {
      const int round = std::atoi(round_dir.filename().string().c_str() + 5);
      entry.rounds.push_back(round_figures(round_dir, round, 0 /* unknown: every accelerator */));
    }
    summary.cases.push_back(std::move(entry));
  }
  return summary;
}

}  // namespace

Summary build_summary(const std::string& run_dir) {
  const fs::path run(run_dir);
  std::error_code ec;
  Summary summary;
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
  for (auto& entry : summary.cases) aggregate_case(entry);
  return summary;
}

}  // namespace xpuperf::report
