#include "xpuperf/core/perflog.h"

#include <chrono>
#include <fstream>

namespace xpuperf {

using nlohmann::json;

std::string format_perflog(const std::string& event, const json& value, const std::string& file, int lineno,
                           std::int64_t time_ms, int rank) {
  json line = json::object();
  line["event"] = event;
  if (!value.is_null()) line["value"] = value;
  line["metadata"] = {{"file", file}, {"lineno", lineno}, {"time_ms", time_ms}, {"rank", rank}};
  // Non-finite floats (a diverged loss) have no JSON form; dump writes them as null.
  return std::string(kPerfLogTag) + line.dump(-1, ' ', false, json::error_handler_t::replace);
}

void PerfLogWriter::log(const std::string& event, const json& value, const char* file, int lineno) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto time_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
  out_ << format_perflog(event, value, file, lineno, time_ms, rank_) << '\n';
  out_.flush();  // a crash must not lose events already emitted
}

std::optional<PerfLogEvent> parse_perflog_line(const std::string& line) {
  const auto tag = line.find("[PerfLog]");
  if (tag == std::string::npos) return std::nullopt;
  const json parsed = json::parse(line.begin() + static_cast<std::ptrdiff_t>(tag + 9), line.end(), nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) return std::nullopt;
  const auto event = parsed.find("event");
  if (event == parsed.end() || !event->is_string()) return std::nullopt;
  PerfLogEvent out;
  out.event = event->get<std::string>();
  if (auto v = parsed.find("value"); v != parsed.end()) out.value = *v;
  if (auto m = parsed.find("metadata"); m != parsed.end()) out.metadata = *m;
  return out;
}

PerfLogParse parse_perflog(std::istream& in) {
  PerfLogParse result;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find("[PerfLog]") == std::string::npos) {
      ++result.other_lines;
      continue;
    }
    auto event = parse_perflog_line(line);
    if (!event) {
      result.broken_lines.push_back(number);
      continue;
    }
    event->line = number;
    result.events.push_back(std::move(*event));
  }
  return result;
}

namespace {

template <typename T>
std::optional<T> take(json& rest, const char* key) {
  auto it = rest.find(key);
  if (it == rest.end()) return std::nullopt;
  std::optional<T> out;
  if constexpr (std::is_same_v<T, bool>) {
    if (it->is_boolean()) out = it->get<bool>();
  } else {
    if (it->is_number()) out = it->get<T>();
  }
  if (out) rest.erase(it);  // a value of the wrong type stays in `extra`, visible
  return out;
}

}  // namespace

json FinishedInfo::to_json() const {
  json out = extra.is_object() ? extra : json::object();
  auto put = [&out](const char* key, const auto& value) {
    if (value) out[key] = *value;
  };
  put("e2e_time", e2e_time);
  put("init_time", init_time);
  put("raw_train_time", raw_train_time);
  put("training_samples_per_second", training_samples_per_second);
  put("training_sequences_per_second", training_samples_per_second);
  put("converged", converged);
  if (final_metric) {
    json metric = {{"name", final_metric->name}, {"value", final_metric->value}};
    metric["target"] = final_metric->target ? json(*final_metric->target) : json(nullptr);
    out["final_metric"] = metric;
  }
  put("global_steps", global_steps);
  put("num_trained_samples", num_trained_samples);
  put("mfu", mfu);
  return out;
}

FinishedInfo FinishedInfo::from_json(const json& value) {
  FinishedInfo info;
  if (!value.is_object()) return info;
  json rest = value;
  info.e2e_time = take<double>(rest, "e2e_time");
  info.init_time = take<double>(rest, "init_time");
  info.raw_train_time = take<double>(rest, "raw_train_time");
  info.training_samples_per_second = take<double>(rest, "training_samples_per_second");
  const auto sequences = take<double>(rest, "training_sequences_per_second");
  if (!info.training_samples_per_second) info.training_samples_per_second = sequences;
  info.converged = take<bool>(rest, "converged");
  info.global_steps = take<std::int64_t>(rest, "global_steps");
  info.num_trained_samples = take<std::int64_t>(rest, "num_trained_samples");
  info.mfu = take<double>(rest, "mfu");

  if (auto it = rest.find("final_metric"); it != rest.end() && it->is_object()) {
    const json& m = *it;
    if (m.contains("name") && m["name"].is_string() && m.contains("value") && m["value"].is_number()) {
      FinalMetric metric{m["name"].get<std::string>(), m["value"].get<double>(), std::nullopt};
      if (m.contains("target") && m["target"].is_number()) metric.target = m["target"].get<double>();
      info.final_metric = metric;
      rest.erase(it);
    }
  }
  if (!info.final_metric) {
    // FlagPerf writes final_<metric> keys (final_loss, final_mlm_accuracy, final_acc1, ...):
    // the case's metric is the one that is not the loss, or the loss when it is alone.
    std::string chosen;
    for (const auto& [key, v] : rest.items()) {
      if (key.rfind("final_", 0) != 0 || !v.is_number()) continue;
      if (chosen.empty() || chosen == "final_loss") chosen = key;
    }
    if (!chosen.empty()) info.final_metric = FinalMetric{chosen.substr(6), rest[chosen].get<double>(), std::nullopt};
  }
  info.extra = rest;
  return info;
}

std::optional<FinishedInfo> finished_in(const std::string& log_path) {
  std::ifstream in(log_path);
  if (!in) return std::nullopt;
  std::optional<FinishedInfo> found;
  for (const auto& e : parse_perflog(in).events)
    if (e.event == perflog_event::kFinished) found = FinishedInfo::from_json(e.value);
  return found;
}

}  // namespace xpuperf
