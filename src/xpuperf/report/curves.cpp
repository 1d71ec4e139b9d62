#include "xpuperf/report/curves.h"

#include <algorithm>
#include <cmath>

namespace xpuperf::report {
namespace {
using nlohmann::json;

std::optional<double> number(const json& value, const char* key) {
  if (!value.is_object() || !value.contains(key) || !value[key].is_number()) return std::nullopt;
  return value[key].get<double>();
}

// Metrics whose target is a ceiling, not a floor, when the log does not say.
bool lower_is_better(const std::string& name) {
  for (const char* word : {"loss", "perplexity", "error", "wer", "ppl"})
    if (name.find(word) != std::string::npos) return true;
  return false;
}

json points_json(const std::vector<CurvePoint>& points, std::size_t max_points) {
  json out = json::array();
  if (points.empty()) return out;
  const std::size_t step = std::max<std::size_t>(1, (points.size() + max_points - 1) / max_points);
  for (std::size_t i = 0; i < points.size(); i += step)
    out.push_back({points[i].step, std::round(points[i].seconds * 1000) / 1000, points[i].value});
  if ((points.size() - 1) % step != 0) {  // the last point always: where the run ended
    const auto& p = points.back();
    out.push_back({p.step, std::round(p.seconds * 1000) / 1000, p.value});
  }
  return out;
}

std::vector<CurvePoint> points_from(const json& j) {
  std::vector<CurvePoint> out;
  if (!j.is_array()) return out;
  for (const auto& p : j)
    if (p.is_array() && p.size() == 3 && p[0].is_number() && p[1].is_number() && p[2].is_number())
      out.push_back({p[0].get<double>(), p[1].get<double>(), p[2].get<double>()});
  return out;
}

}  // namespace

TrainingCurves training_curves(const std::vector<PerfLogEvent>& events) {
  TrainingCurves c;
  std::optional<double> t0_ms;
  for (const auto& e : events)
    if (e.event == perflog_event::kInitStart) {
      t0_ms = number(e.metadata, "time_ms");
      break;
    }
  for (const auto& e : events)
    if (e.event == perflog_event::kFinished && e.value.is_object()) {
      const FinishedInfo f = FinishedInfo::from_json(e.value);
      if (f.final_metric) {
        c.metric_name = f.final_metric->name;
        c.target = f.final_metric->target;
      }
      c.higher_is_better = f.extra.value("target_mode", lower_is_better(c.metric_name) ? "min" : "max") != "min";
    }
  std::int64_t steps_seen = 0;
  for (const auto& e : events) {
    const auto time_ms = number(e.metadata, "time_ms");
    if (time_ms && !t0_ms) t0_ms = time_ms;
    const double seconds = time_ms && t0_ms ? (*time_ms - *t0_ms) / 1000 : 0;
    if (e.event == perflog_event::kStepEnd) {
      ++steps_seen;
      const double step = number(e.value, "global_steps").value_or(static_cast<double>(steps_seen));
      if (auto loss = number(e.value, "loss")) c.loss.push_back({step, seconds, *loss});
      if (auto rate = number(e.value, "samples_per_second")) c.throughput.push_back({step, seconds, *rate});
    } else if (e.event == perflog_event::kEvaluate && e.value.is_object()) {
      if (c.metric_name.empty())
        for (const auto& [key, v] : e.value.items())
          if (v.is_number() && key != "global_steps" && key != "epoch") {
            c.metric_name = key;
            c.higher_is_better = !lower_is_better(key);
            break;
          }
      const auto value = number(e.value, c.metric_name.c_str());
      if (!value) continue;
      const double step = number(e.value, "global_steps").value_or(static_cast<double>(steps_seen));
      c.metric.push_back({step, seconds, *value});
      const bool reached = c.target && (c.higher_is_better ? *value >= *c.target : *value <= *c.target);
      if (reached && !c.target_hit) c.target_hit = c.metric.back();
    }
  }
  return c;
}

json TrainingCurves::to_json(std::size_t max_points) const {
  json out = {{"loss", points_json(loss, max_points)}, {"throughput", points_json(throughput, max_points)}};
  if (!metric_name.empty())
    out["metric"] = {{"name", metric_name},
                     {"target", target ? json(*target) : json(nullptr)},
                     {"mode", higher_is_better ? "max" : "min"},
                     {"points", points_json(metric, max_points)}};
  if (target_hit)
    out["target_reached"] = {{"step", target_hit->step},
                             {"seconds", std::round(target_hit->seconds * 1000) / 1000},
                             {"value", target_hit->value}};
  return out;
}

TrainingCurves TrainingCurves::from_json(const json& j) {
  TrainingCurves c;
  if (!j.is_object()) return c;
  c.loss = points_from(j.value("loss", json::array()));
  c.throughput = points_from(j.value("throughput", json::array()));
  if (j.contains("metric") && j["metric"].is_object()) {
    const json& m = j["metric"];
    c.metric_name = m.value("name", "");
    if (m.contains("target") && m["target"].is_number()) c.target = m["target"].get<double>();
    c.higher_is_better = m.value("mode", "max") != "min";
    c.metric = points_from(m.value("points", json::array()));
  }
  if (j.contains("target_reached") && j["target_reached"].is_object()) {
    const json& t = j["target_reached"];
    c.target_hit = CurvePoint{t.value("step", 0.0), t.value("seconds", 0.0), t.value("value", 0.0)};
  }
  return c;
}

}  // namespace xpuperf::report
