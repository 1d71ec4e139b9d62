#include "xpuperf/report/summary_model.h"

#include <filesystem>
#include <set>

#include "xpuperf/core/files.h"

namespace xpuperf::report {
using nlohmann::json;

const char* family_text(CaseFamilyKind family) {
  switch (family) {
    case CaseFamilyKind::Training:
      return "training";
    case CaseFamilyKind::Inference:
      return "inference";
    case CaseFamilyKind::Base:
      return "base";
    case CaseFamilyKind::Operation:
      return "operation";
  }
  return "training";
}

const double* Round::find(const std::string& figure_name) const {
  const auto it = figures.find(figure_name);
  return it == figures.end() ? nullptr : &it->second;
}

const json* Round::record(const std::string& key) const {
  const auto it = records.find(key);
  return it == records.end() || it->is_null() ? nullptr : &*it;
}

std::optional<TrainingCurves> Round::curves() const {
  const json* c = record("curves");
  if (!c) return std::nullopt;
  return TrainingCurves::from_json(*c);
}

const Aggregate* CaseResult::stat(const std::string& figure_name) const {
  const auto it = aggregate.find(figure_name);
  return it == aggregate.end() ? nullptr : &it->second;
}

const Round* CaseResult::last_ok() const {
  const Round* found = nullptr;
  for (const auto& r : rounds)
    if (r.ok()) found = &r;
  return found;
}

std::string CaseResult::identity() const {
  return key.substr(0, key.rfind(':'));
}

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

// The typed keys of a round besides its figures; any other key is a record.
const char* const kRoundKeys[] = {"round",
                                  "status",
                                  "reason",
                                  "device",
                                  "plugin",
                                  "converged",
                                  "global_steps",
                                  "num_trained_samples",
                                  "steps_to_target",
                                  "final_metric_name",
                                  "final_metric_target",
                                  "figure",
                                  "unit",
                                  "perf_per_watt_unit",
                                  "check",
                                  "implementation",
                                  "correct",
                                  "datasheet_ratio",
                                  "data",
                                  "caveat"};

template <typename T>
void put(json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}

json round_json(const Round& r) {
  json j = r.records;
  j["round"] = r.number;
  j["status"] = r.status;
  j["reason"] = r.reason;
  if (!r.device.empty()) j["device"] = r.device;
  if (!r.plugin.empty()) j["plugin"] = r.plugin;
  for (const auto& [name, value] : r.figures) j[name] = value;
  put(j, "converged", r.converged);
  put(j, "global_steps", r.global_steps);
  put(j, "num_trained_samples", r.num_trained_samples);
  put(j, "steps_to_target", r.steps_to_target);
  put(j, "final_metric_name", r.final_metric_name);
  put(j, "final_metric_target", r.final_metric_target);
  put(j, "figure", r.figure);
  put(j, "unit", r.unit);
  put(j, "perf_per_watt_unit", r.perf_per_watt_unit);
  put(j, "check", r.check);
  put(j, "implementation", r.implementation);
  put(j, "correct", r.correct);
  put(j, "datasheet_ratio", r.datasheet_ratio);
  put(j, "data", r.data);
  put(j, "caveat", r.caveat);
  return j;
}

json case_json(const CaseResult& c) {
  json j = {{"case", c.key},
            {"rounds_planned", c.rounds_planned},
            {"rounds", json::array()},
            {"failed_rounds", json::array()}};
  if (c.family) {
    j["family"] = family_text(*c.family);
    j["dir"] = c.dir;
    j["model"] = c.model;
    j["framework"] = c.framework;
    j["hardware"] = c.hardware;
    j["nnodes"] = c.nnodes;
    j["nproc"] = c.nproc;
  }
  for (const auto& r : c.rounds) {
    j["rounds"].push_back(round_json(r));
    if (!r.ok()) j["failed_rounds"].push_back({{"round", r.number}, {"status", r.status}, {"reason", r.reason}});
  }
  json agg = json::object();
  for (const auto& [name, a] : c.aggregate) agg[name] = a.to_json();
  agg["rounds_used"] = c.rounds_used;
  agg["rounds_converged"] = c.rounds_converged;
  if (!c.final_metric_name.empty()) agg["final_metric_name"] = c.final_metric_name;
  j["aggregate"] = agg;
  return j;
}

// Reads one JSON object of summary.json, naming the file and the path of a key that does not read.
class Reader {
 public:
  Reader(const json& j, std::string where, std::string path) : j_(j), where_(std::move(where)), path_(std::move(path)) {
    if (!j_.is_object()) fail("", "an object", j_);
  }
  const json& raw() const { return j_; }
  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  std::string text(const char* key, bool required = false) const {
    if (!has(key)) {
      if (required) missing(key);
      return "";
    }
    if (!j_[key].is_string()) fail(key, "a string", j_[key]);
    return j_[key].get<std::string>();
  }
  std::optional<std::string> optional_text(const char* key) const {
    if (!has(key)) return std::nullopt;
    return text(key);
  }
  std::int64_t integer(const char* key, bool required = false) const {
    if (!has(key)) {
      if (required) missing(key);
      return 0;
    }
    if (!j_[key].is_number_integer()) fail(key, "an integer", j_[key]);
    return j_[key].get<std::int64_t>();
  }
  std::optional<std::int64_t> optional_integer(const char* key) const {
    if (!has(key)) return std::nullopt;
    return integer(key);
  }
  std::optional<double> number(const char* key) const {
    if (!has(key)) return std::nullopt;
    if (!j_[key].is_number()) fail(key, "a number", j_[key]);
    return j_[key].get<double>();
  }
  std::optional<bool> boolean(const char* key) const {
    if (!has(key)) return std::nullopt;
    if (!j_[key].is_boolean()) fail(key, "true or false", j_[key]);
    return j_[key].get<bool>();
  }
  const json& array(const char* key) const {
    static const json empty = json::array();
    if (!has(key)) return empty;
    if (!j_[key].is_array()) fail(key, "a list", j_[key]);
    return j_[key];
  }
  std::string at(const std::string& key) const { return path_ + (path_.empty() ? "" : ".") + key; }
  const std::string& where() const { return where_; }

  [[noreturn]] void fail(const std::string& key, const char* expected, const json& got) const {
    const std::string what = key.empty() ? (path_.empty() ? "the top level" : path_) : at(key);
    throw SummaryError(where_ + ": " + what + " must be " + expected + ", got " + got.dump() +
                       " (edited or damaged? rebuild it with `xpuperf report RUN_DIR`)");
  }
  [[noreturn]] void missing(const char* key) const {
    throw SummaryError(where_ + ": " + at(key) + " is missing (edited or damaged? rebuild it with `xpuperf report " +
                       "RUN_DIR`)");
  }

 private:
  const json& j_;
  std::string where_, path_;
};

bool is_round_key(const std::string& key) {
  for (const char* k : kRoundKeys)
    if (key == k) return true;
  return false;
}

Round read_round(const Reader& in) {
  Round r;
  r.number = static_cast<int>(in.integer("round", true));
  r.status = in.text("status", true);
  r.reason = in.text("reason");
  r.device = in.text("device");
  r.plugin = in.text("plugin");
  r.converged = in.boolean("converged");
  r.global_steps = in.optional_integer("global_steps");
  r.num_trained_samples = in.optional_integer("num_trained_samples");
  r.steps_to_target = in.number("steps_to_target");
  r.final_metric_name = in.optional_text("final_metric_name");
  r.final_metric_target = in.number("final_metric_target");
  r.figure = in.optional_text("figure");
  r.unit = in.optional_text("unit");
  r.perf_per_watt_unit = in.optional_text("perf_per_watt_unit");
  r.check = in.optional_text("check");
  r.implementation = in.optional_text("implementation");
  r.correct = in.boolean("correct");
  r.datasheet_ratio = in.number("datasheet_ratio");
  r.data = in.optional_text("data");
  r.caveat = in.optional_text("caveat");
  const std::set<std::string> figures(aggregated_figures().begin(), aggregated_figures().end());
  for (const auto& [key, value] : in.raw().items()) {
    if (figures.count(key)) {
      if (const auto v = in.number(key.c_str())) r.figures[key] = *v;
    } else if (!is_round_key(key)) {
      r.records[key] = value;
    }
  }
  return r;
}

Aggregate read_aggregate(const Reader& in) {
  Aggregate a;
  a.n = static_cast<std::size_t>(in.integer("n", true));
  for (auto [key, field] : {std::pair<const char*, double*>{"mean", &a.mean},
                            {"std", &a.std},
                            {"median", &a.median},
                            {"min", &a.min},
                            {"max", &a.max},
                            {"cv", &a.cv}})
    *field = in.number(key).value_or(0.0);
  const json& ci = in.array("ci95");
  if (ci.size() == 2 && ci[0].is_number() && ci[1].is_number()) {
    a.ci95_low = ci[0].get<double>();
    a.ci95_high = ci[1].get<double>();
  }
  a.olympic_mean = in.number("olympic_mean");
  return a;
}

std::optional<CaseFamilyKind> family_of_text(const Reader& in) {
  if (!in.has("family")) return std::nullopt;
  const std::string f = in.text("family");
  for (const auto kind :
       {CaseFamilyKind::Training, CaseFamilyKind::Inference, CaseFamilyKind::Base, CaseFamilyKind::Operation})
    if (f == family_text(kind)) return kind;
  in.fail("family", "training, inference, base or operation", in.raw()["family"]);
}

CaseResult read_case(const Reader& in) {
  CaseResult c;
  c.key = in.text("case", true);
  c.family = family_of_text(in);
  c.dir = in.text("dir");
  c.model = in.text("model");
  c.framework = in.text("framework");
  c.hardware = in.text("hardware");
  c.nnodes = static_cast<int>(in.integer("nnodes"));
  c.nproc = static_cast<int>(in.integer("nproc"));
  c.rounds_planned = static_cast<int>(in.integer("rounds_planned"));
  const json& rounds = in.array("rounds");
  for (std::size_t i = 0; i < rounds.size(); ++i)
    c.rounds.push_back(read_round(Reader(rounds[i], in.where(), in.at("rounds[" + std::to_string(i) + "]"))));
  if (in.has("aggregate")) {
    const Reader agg(in.raw()["aggregate"], in.where(), in.at("aggregate"));
    c.rounds_used = static_cast<int>(agg.integer("rounds_used"));
    c.rounds_converged = static_cast<int>(agg.integer("rounds_converged"));
    c.final_metric_name = agg.text("final_metric_name");
    for (const auto& [key, value] : agg.raw().items())
      if (value.is_object()) c.aggregate[key] = read_aggregate(Reader(value, in.where(), agg.at(key)));
  }
  return c;
}

}  // namespace

json Summary::to_json() const {
  json j = {{"schema", schema},
            {"xpuperf_version", xpuperf_version},
            {"run", run},
            {"plan", {{"vendor", vendor}, {"launcher", launcher}, {"hosts", hosts}}},
            {"cases", json::array()}};
  if (!source.empty()) j["source"] = source;
  if (!system.is_null()) j["system"] = system;
  for (const auto& c : cases) j["cases"].push_back(case_json(c));
  return j;
}

Summary Summary::from_json(const json& j, const std::string& where) {
  const Reader in(j, where, "");
  Summary s;
  s.schema = in.text("schema", true);
  if (s.schema != kSummarySchema)
    throw SummaryError(where + ": schema " + s.schema + " is not " + kSummarySchema +
                       " (written by another xpuperf? rebuild it with `xpuperf report RUN_DIR`)");
  s.xpuperf_version = in.text("xpuperf_version");
  s.run = in.text("run");
  s.source = in.text("source");
  if (in.has("plan")) {
    const Reader plan(j["plan"], where, "plan");
    s.vendor = plan.text("vendor");
    s.launcher = plan.text("launcher");
    const json& hosts = plan.array("hosts");
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      if (!hosts[i].is_string()) plan.fail("hosts[" + std::to_string(i) + "]", "a string", hosts[i]);
      s.hosts.push_back(hosts[i].get<std::string>());
    }
  }
  if (in.has("system")) s.system = Reader(j["system"], where, "system").raw();
  const json& cases = in.array("cases");
  for (std::size_t i = 0; i < cases.size(); ++i)
    s.cases.push_back(read_case(Reader(cases[i], where, "cases[" + std::to_string(i) + "]")));
  return s;
}

Summary read_summary_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string file = fs::is_directory(path, ec) ? (fs::path(path) / "summary.json").string() : path;
  if (!fs::exists(file, ec))
    throw SummaryError(file + " does not exist" +
                       (file == path ? std::string() : " (rebuild it with `xpuperf report " + path + "`)"));
  const auto j = read_json_file(file);
  if (!j) throw SummaryError(file + " is not JSON (edited or damaged?)");
  return Summary::from_json(*j, file);
}

}  // namespace xpuperf::report
