#pragma once
// Watches a training run's loss for infinity and not-a-number without making a step wait: the
// first such step is kept on the device (one masked fill a step) and read where the run
// synchronises anyway (a logged step, an evaluation). A run that diverged has no result: it fails
// (RunFailed, runtime.h), naming the step, rather than ending "not converged".

#include <torch/torch.h>

#include <cstdint>

namespace xpuperf::train {

class DivergenceWatch {
 public:
  // After step `step` (1-based) with this rank's loss.
  void record(const torch::Tensor& loss, std::int64_t step);
  // Throws RunFailed naming the first step whose loss was not finite; `taken`: the steps so far.
  void check(std::int64_t taken) const;
  // A logged loss over every rank: not finite means some rank diverged; this rank's step is named
  // when it saw it, else the logged one.
  void check_logged(double loss, std::int64_t step) const;

 private:
  torch::Tensor first_step_;  // -1 while every loss was finite
};

}  // namespace xpuperf::train
