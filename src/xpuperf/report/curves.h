#pragma once
// A training round's curves from its PerfLog events: loss and throughput at each STEP_END, the
// evaluation metric at each EVALUATE, against the step and against the wall time since the case
// started (INIT_START), and the moment the metric first reached its target — MLPerf's
// time-to-train. Kept in summary.json per round, so report.html and `xpuperf compare --html`
// draw them from the summary alone.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "xpuperf/core/perflog.h"

namespace xpuperf::report {

struct CurvePoint {
  double step = 0;
  double seconds = 0;  // since INIT_START (else the first event)
  double value = 0;
};

struct TrainingCurves {
  std::vector<CurvePoint> loss, throughput, metric;  // throughput: samples/s over each log interval
  std::string metric_name;
  std::optional<double> target;
  bool higher_is_better = true;          // the target's mode: max (accuracy) or min (loss, perplexity)
  std::optional<CurvePoint> target_hit;  // the first evaluation at or past the target

  bool empty() const { return loss.empty() && throughput.empty() && metric.empty(); }
  // {"loss": [[step, s, v], ...], "throughput": ..., "metric": {"name", "target", "mode", "points"},
  //  "target_reached": {"step", "seconds"}}; each series thinned to at most `max_points`.
  nlohmann::json to_json(std::size_t max_points = 400) const;
  static TrainingCurves from_json(const nlohmann::json& j);
};

// From one rank's events (the leader's: it prints STEP_END and EVALUATE). FINISHED, when there,
// names the metric, its target and mode; FlagPerf's logs without them still give the curves.
TrainingCurves training_curves(const std::vector<PerfLogEvent>& events);

}  // namespace xpuperf::report
