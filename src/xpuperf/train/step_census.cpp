#include "xpuperf/train/step_census.h"

#include <algorithm>

namespace xpuperf::train {

void StepCensus::before_step(std::int64_t steps_done) {
  if (!running_ && seen_.calls.empty() && steps_done == skip_ - steps_)
    running_ = std::make_unique<torchrt::OperatorCensus>();
}

void StepCensus::after_step(std::int64_t steps_done) {
  if (running_ && steps_done == skip_) stop(steps_done);
}

void StepCensus::finish(std::int64_t steps_done) {
  if (running_) stop(steps_done);
}

void StepCensus::stop(std::int64_t steps_done) {
  seen_.calls = running_->stop();
  seen_.opaque_backward = running_->opaque_backward();
  seen_.units = static_cast<double>(steps_ - std::max<std::int64_t>(0, skip_ - steps_done));
  running_.reset();
}

nlohmann::json StepCensus::describe(const std::string& what, double timed_seconds, std::int64_t timed_steps) const {
  if (seen_.calls.empty() || seen_.units <= 0) return {{"error", "the run ended before its census began"}};
  torchrt::Census census = seen_;
  census.what = what;
  if (timed_steps > 0) {
    census.step_ms = timed_seconds / static_cast<double>(timed_steps) * 1e3;
    census.step_ms_source = "the mean of the run's " + std::to_string(timed_steps) + " timed steps";
  }
  return census.to_json();
}

}  // namespace xpuperf::train
