#include "xpuperf/train/step_schedule.h"

#include "xpuperf/parallel/pipeline.h"

namespace xpuperf::train {
namespace {

class AccumulationSchedule : public StepSchedule {
 public:
  AccumulationSchedule(torchrt::Distributed& data, std::int64_t accumulation, MicroBatchRunner runner)
      : data_(data), accumulation_(accumulation), runner_(std::move(runner)) {}

  std::optional<torch::Tensor> run(const NextBatch& next, const MicroStep& step, GradientSync& sync) override {
    torch::Tensor loss;
    const auto forward_backward = [&](const Batch& b) {
      torch::Tensor l = step.forward(b);
      step.backward(l);
      return l;
    };
    for (std::int64_t micro = 0; micro < accumulation_; ++micro) {
      auto batch = next();
      if (!batch) return std::nullopt;
      sync.begin_backward(micro + 1 == accumulation_);
      const torch::Tensor l = runner_(*batch, forward_backward);
      sync.end_backward();
      const torch::Tensor part = accumulation_ > 1 ? l.detach() / static_cast<double>(accumulation_) : l.detach();
      loss = loss.defined() ? loss + part : part;
    }
    return loss;
  }

  torch::Tensor global_loss(const torch::Tensor& loss) override {
    if (data_.world_size() == 1) return loss;
    auto shared = loss.detach().to(torch::kFloat).reshape({1});
    data_.all_reduce_sum(shared);
    return shared.reshape({}) / static_cast<double>(data_.world_size());
  }

 private:
  torchrt::Distributed& data_;
  std::int64_t accumulation_;
  MicroBatchRunner runner_;
};

class PipelineSchedule : public StepSchedule {
 public:
  PipelineSchedule(parallel::PipelineStage& pipeline, const parallel::SplitModel& split, torchrt::Distributed& data,
                   std::int64_t accumulation)
      : pipeline_(pipeline), split_(split), data_(data), accumulation_(accumulation) {}

  std::optional<torch::Tensor> run(const NextBatch& next, const MicroStep& step, GradientSync& sync) override {
    // The step's micro-batches go in together.
    std::vector<Batch> batches;
    for (std::int64_t micro = 0; micro < accumulation_; ++micro) {
      auto batch = next();
      if (!batch) return std::nullopt;
      batches.push_back(std::move(*batch));
    }
    std::vector<torch::Tensor> shapes;
    for (const auto& b : batches) shapes.push_back(b[0]);
    return pipeline_.train_step(
        shapes, [&](int m) { return step.forward(batches[static_cast<std::size_t>(m)]); },
        [&](int, const torch::Tensor& l) { step.backward(l); },
        [&](int m) { sync.begin_backward(m + 1 == accumulation_); });
  }

  void finish_gradients() override { pipeline_.sum_tied_gradients(split_.tied_across_stages); }

  torch::Tensor global_loss(const torch::Tensor& loss) override {
    auto shared = loss.detach().to(torch::kFloat).reshape({1});
    pipeline_.group().all_reduce_sum(shared);
    data_.all_reduce_sum(shared);
    return shared.reshape({}) / static_cast<double>(data_.world_size());
  }

 private:
  parallel::PipelineStage& pipeline_;
  const parallel::SplitModel& split_;
  torchrt::Distributed& data_;
  std::int64_t accumulation_;
};

}  // namespace

std::unique_ptr<StepSchedule> make_step_schedule(const parallel::ParallelGroups& groups,
                                                 const parallel::SplitModel& split, torchrt::Distributed& data,
                                                 std::int64_t accumulation, MicroBatchRunner runner) {
  if (groups.pipeline) return std::make_unique<PipelineSchedule>(*groups.pipeline, split, data, accumulation);
  return std::make_unique<AccumulationSchedule>(data, accumulation, std::move(runner));
}

}  // namespace xpuperf::train
