#include "xpuperf/train/divergence_watch.h"

#include <cmath>
#include <string>

#include "xpuperf/train/runtime.h"

namespace xpuperf::train {

void DivergenceWatch::record(const torch::Tensor& loss, std::int64_t step) {
  const auto bad = loss.detach().isfinite().logical_not();
  if (!first_step_.defined())
    first_step_ = torch::full({}, -1, torch::TensorOptions().dtype(torch::kLong).device(bad.device()));
  first_step_.masked_fill_(bad.logical_and(first_step_.lt(0)), step);
}

void DivergenceWatch::check(std::int64_t taken) const {
  if (!first_step_.defined()) return;
  const auto step = first_step_.item<std::int64_t>();
  if (step >= 0)
    throw RunFailed("the training loss became infinite or not a number at step " + std::to_string(step) + " (of " +
                    std::to_string(taken) +
                    " taken): the model diverged, so the run has no result (it is not reported as 'not "
                    "converged'); lower lr, check init_checkpoint and the data, or use fp32");
}

void DivergenceWatch::check_logged(double loss, std::int64_t step) const {
  if (std::isfinite(loss)) return;
  check(step);
  throw RunFailed("the training loss over the ranks is " + std::to_string(loss) + " at step " + std::to_string(step) +
                  ": the model diverged on another rank, so the run has no result");
}

}  // namespace xpuperf::train
