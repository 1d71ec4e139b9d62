#pragma once
// `census_steps: N`: every operator call of the N untimed steps before timing_skip_steps
// (torchrt/op_census.h), for FINISHED's `operator_census`, which `xpuperf op --census` replays to
// explain the step. The census's callbacks slow the steps they watch, so it ends before the timed
// ones begin; the first step (the optimizer's state made, cuDNN's search) is never among them.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "xpuperf/torchrt/op_census.h"

namespace xpuperf::train {

class StepCensus {
 public:
  StepCensus(std::int64_t steps, std::int64_t timing_skip_steps) : steps_(steps), skip_(timing_skip_steps) {}

  // Around each step, with steps_done steps taken: starts the census before its first step, and ends
  // it after its last.
  void before_step(std::int64_t steps_done);
  void after_step(std::int64_t steps_done);
  // The run ended, perhaps inside the census: what it saw.
  void finish(std::int64_t steps_done);

  // FINISHED's operator_census: `what` ran it; the step's time is the mean of the timed steps.
  nlohmann::json describe(const std::string& what, double timed_seconds, std::int64_t timed_steps) const;

 private:
  void stop(std::int64_t steps_done);

  std::int64_t steps_, skip_;
  std::unique_ptr<torchrt::OperatorCensus> running_;
  torchrt::Census seen_;  // the calls, the opaque backwards and how many steps, once stopped
};

}  // namespace xpuperf::train
