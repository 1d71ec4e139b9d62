#pragma once
// Reading a training run's PerfLog in the command-line tests: its events, the losses it logged,
// the first event of a kind.

#include <sstream>
#include <string>
#include <vector>

#include "xpuperf/core/perflog.h"

namespace xpuperf {

inline std::vector<PerfLogEvent> events_of(const std::string& text) {
  std::istringstream in(text);
  return parse_perflog(in).events;
}

inline std::vector<double> step_losses(const std::vector<PerfLogEvent>& events) {
  std::vector<double> losses;
  for (const auto& e : events)
    if (e.event == "STEP_END") losses.push_back(e.value["loss"].get<double>());
  return losses;
}

// The mean of v[from, to).
inline double mean(const std::vector<double>& v, std::size_t from, std::size_t to) {
  double sum = 0;
  for (std::size_t i = from; i < to; ++i) sum += v[i];
  return sum / static_cast<double>(to - from);
}

// The value of the first `name` event; nullptr when there is none.
inline const nlohmann::json* event_value(const std::vector<PerfLogEvent>& events, const std::string& name) {
  for (const auto& e : events)
    if (e.event == name) return &e.value;
  return nullptr;
}

}  // namespace xpuperf
