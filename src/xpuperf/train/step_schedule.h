#pragma once
// How a step's micro-batches run forward and backward, the runtime's schedule strategy:
//   AccumulationSchedule  one micro-batch after another on this rank, gradients accumulating
//                         (one micro-batch a step without accumulation);
//   PipelineSchedule      the step's micro-batches through the pipeline's stages in Megatron's
//                         1F1B order (pipeline.h).
// A micro-batch's forward and backward go through a MicroBatchRunner: eagerly, or by replaying a
// captured CUDA graph (cuda_graphs: step_graph.h), a wrapper the schedule does not know about.

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>

#include "xpuperf/parallel/model_parallel.h"
#include "xpuperf/torchrt/distributed.h"
#include "xpuperf/train/gradient_sync.h"
#include "xpuperf/train/training_case.h"

namespace xpuperf::train {

// The case's side of a micro-batch.
struct MicroStep {
  std::function<torch::Tensor(const Batch&)> forward;  // its loss, under the step's precision
  std::function<void(const torch::Tensor&)> backward;  // from its loss (scaled as the step needs)
};
// The next micro-batch, on the device; nothing when the epoch's data ran out.
using NextBatch = std::function<std::optional<Batch>()>;
// Runs `forward_backward` on a micro-batch and returns its loss.
using MicroBatchRunner =
    std::function<torch::Tensor(const Batch&, const std::function<torch::Tensor(const Batch&)>& forward_backward)>;

class StepSchedule {
 public:
  virtual ~StepSchedule() = default;
  // One step's forward and backward over its micro-batches from `next`, with `sync` told where each
  // backward begins and ends. The step's loss (the micro-batches' mean; with pipeline stages, the
  // last stage's, zero on the others), or nothing when the data ran out before the step was whole.
  virtual std::optional<torch::Tensor> run(const NextBatch& next, const MicroStep& step, GradientSync& sync) = 0;
  // After the gradients are averaged: what the schedule itself adds to them.
  virtual void finish_gradients() {}
  // The global batch's loss from this rank's: the mean over the data-parallel ranks (and, with
  // pipeline stages, from the last stage of each pipeline).
  virtual torch::Tensor global_loss(const torch::Tensor& loss) = 0;
};

// PipelineSchedule where `groups` has pipeline stages, else AccumulationSchedule; `accumulation`
// micro-batches a step.
std::unique_ptr<StepSchedule> make_step_schedule(const parallel::ParallelGroups& groups,
                                                 const parallel::SplitModel& split, torchrt::Distributed& data,
                                                 std::int64_t accumulation, MicroBatchRunner runner);

}  // namespace xpuperf::train
