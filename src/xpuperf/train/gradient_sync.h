#pragma once
// How a step's gradients become the same on every data-parallel rank, and how the optimizer steps
// them: the runtime's gradient-synchronisation strategy.
//   DataParallelSync  each rank keeps every gradient; buckets are all-reduced during backward
//                     (or after it), the optimizer steps the whole model on every rank.
//   ZeroSync          ZeRO-1/2/3 (zero.h): each rank keeps its shares; reduce-scatter, step the
//                     shares, all-gather.
// The step calls them in this order: set_lr, zero_grad; for each micro-batch begin_backward and
// end_backward around its backward; finish_step; then (with the loss scaler) overflow_agreement;
// gradient_norm, clip over stepped(), step.

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "xpuperf/core/config.h"
#include "xpuperf/optim/optimizers.h"
#include "xpuperf/parallel/model_parallel.h"
#include "xpuperf/torchrt/distributed.h"
#include "xpuperf/train/training_settings.h"

namespace xpuperf::train {

class GradientSync {
 public:
  virtual ~GradientSync() = default;
  void set_lr(double lr) { optimizer().set_lr(lr); }
  void flush_optimizer() { optimizer().flush(); }
  void write_master_weights() { optimizer().write_master_weights(); }
  // optim::StepOptimizer::clip_in_step over stepped(): whether the next step clips (else clip first).
  bool clip_in_step(const torch::Tensor& norm, double max_norm) { return optimizer().clip_in_step(norm, max_norm); }
  virtual void zero_grad() = 0;
  // Around each micro-batch's backward; `last`: the step's last micro-batch (gradients are sent).
  virtual void begin_backward(bool last) = 0;
  virtual void end_backward() = 0;
  // After the step's last backward: the gradients averaged over the data-parallel ranks.
  virtual void finish_step() = 0;
  // What the optimizer steps and clipping scales: the parameters, or this rank's shares of them.
  virtual const std::vector<torch::Tensor>& stepped() const = 0;
  // The global L2 norm of the averaged gradients, over every rank that holds a part of them.
  virtual torch::Tensor gradient_norm() = 0;
  // Makes the loss scaler's inf/nan flag the same on every rank, where each checked only its part
  // of the gradients; empty where every rank holds them all.
  virtual std::function<void(torch::Tensor&)> overflow_agreement() = 0;
  // Steps the optimizer, and gives every rank what it needs of the result. found_inf (defined only
  // where skips_on_device): the step is left undone on the device where that flag is set.
  virtual void step(const torch::Tensor& found_inf = {}) = 0;
  // Whether step can take the loss scaler's inf/nan flag on the device instead of a host decision.
  virtual bool skips_on_device() { return false; }
  // Before the model is saved or the run ends: every parameter whole on every rank.
  virtual void gather_all() {}
  // What FINISHED says of it.
  virtual void describe(nlohmann::json& finished) const { (void)finished; }

 protected:
  virtual optim::StepOptimizer& optimizer() = 0;
};

// What a sync needs of the run: the data-parallel group, the world (for model-parallel agreement)
// and the model split over ranks.
struct SyncContext {
  const Config& cfg;
  const TrainingSettings& settings;
  optim::OptimizerImpl optimizer_impl;
  torch::nn::Module& model;
  const parallel::SplitModel& split;
  const parallel::ParallelGroups& groups;
  torchrt::Distributed& data;
  torchrt::Distributed& world;
  const std::string& case_name;
};

// ZeroSync for zero_stage 1-3, else DataParallelSync. ConfigError when the model cannot be
// sharded as asked (stage 3 of a model without blocks).
std::unique_ptr<GradientSync> make_gradient_sync(const SyncContext& ctx);

}  // namespace xpuperf::train
