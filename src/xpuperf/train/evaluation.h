#pragma once
// Evaluation during and after training: each data-parallel rank evaluates its share of the eval
// set, and the metrics' sums are added up over the ranks.

#include <torch/torch.h>

#include <map>
#include <string>

#include "xpuperf/parallel/pipeline.h"
#include "xpuperf/torchrt/distributed.h"
#include "xpuperf/train/precision.h"
#include "xpuperf/train/training_case.h"

namespace xpuperf::train {

// Where an evaluation's metrics come from: the data-parallel ranks' shares, summed over `sum_over`
// (with pipeline stages, the world: ranks that hold no metrics — stages before the last, tensor-
// parallel copies — send zeros).
struct EvalRanks {
  torchrt::Distributed& data;
  torchrt::Distributed& sum_over;
  bool holds_metrics = true;
  parallel::PipelineStage* pipeline = nullptr;
  // Ranks whose forwards exchange tokens (expert parallelism): each runs as many batches as the one
  // with the most, repeating its last for the metrics-free extra ones. Null: none.
  torchrt::Distributed* lockstep = nullptr;
};

// A batch on the device, in the memory layout the run asks for.
void to_device(Batch& batch, const torch::Device& device, bool channels_last);

// Evaluates on this rank's share of the eval set and sums the metrics over ranks.
std::map<std::string, double> evaluate(TrainingCase& c, torch::nn::Module& model, Dataset& eval_set,
                                       std::int64_t batch_size, const torch::Device& device, Precision precision,
                                       bool channels_last, const EvalRanks& ranks);

}  // namespace xpuperf::train
