#include "xpuperf/train/gradient_sync.h"

#include <exception>
#include <set>

#include "xpuperf/parallel/activation_checkpoint.h"
#include "xpuperf/parallel/tensor_parallel.h"
#include "xpuperf/parallel/zero.h"

namespace xpuperf::train {
namespace {

class DataParallelSync : public GradientSync {
 public:
  explicit DataParallelSync(const SyncContext& ctx)
      : data_(ctx.data), world_(ctx.world), split_(ctx.split), groups_(ctx.groups) {
    // Expert-parallel parts are reduced over their replicas instead (expert_parallel.h).
    std::set<const c10::TensorImpl*> experts;
    for (const auto& p : split_.experts) experts.insert(p.unsafeGetTensorImpl());
    for (const auto& p : split_.params)
      if (!experts.count(p.unsafeGetTensorImpl())) shared_.push_back(p);
    if (ctx.settings.overlap_grad_reduce) data_.attach_gradient_hooks(shared_);
    optimizer_ = optim::make_optimizer(ctx.settings.optimizer, ctx.model, ctx.optimizer_impl);
    attach_tap();
  }
  ~DataParallelSync() override {
    if (tap_) data_.on_bucket_started(nullptr);
  }
  void zero_grad() override { optimizer_->zero_grad(); }
  void begin_backward(bool last) override {
    data_.begin_step(last);
    if (tap_) tap_->begin_backward(last);
  }
  void end_backward() override {}
  void finish_step() override {
    const bool overlapped = data_.overlapping();
    data_.finish_step(shared_);
    if (tap_ && overlapped && !data_.overlapping()) tap_->forget_step();
    if (groups_.ep) groups_.ep->reduce_expert_gradients(split_.experts);
  }
  const std::vector<torch::Tensor>& stepped() const override { return split_.params; }
  torch::Tensor gradient_norm() override {
    const auto& pipeline = groups_.pipeline;
    if (groups_.ep)  // each rank of the group holds its own experts
      return parallel::model_parallel_gradient_norm(split_.params, split_.experts, &groups_.ep->group(), nullptr, {});
    if (!groups_.tp && !pipeline) return optim::gradient_norm(split_.params);
    // The last stage's copy of a tied embedding is counted by the first.
    const bool counts_tied = pipeline && pipeline->last() && !pipeline->first();
    return parallel::model_parallel_gradient_norm(
        split_.params, split_.split, groups_.tp ? &groups_.tp->group() : nullptr,
        pipeline ? &pipeline->group() : nullptr,
        counts_tied ? split_.tied_across_stages : std::vector<torch::Tensor>{});
  }
  std::function<void(torch::Tensor&)> overflow_agreement() override {
    // Each rank of a tensor-parallel or expert-parallel group or a pipeline checked its own part.
    if (!groups_.tp && !groups_.pipeline && !groups_.ep) return {};
    return [this](torch::Tensor& found_inf) { world_.all_reduce_max(found_inf); };
  }
  void step(const torch::Tensor& found_inf) override { optimizer_->step_unless(found_inf); }
  bool skips_on_device() override { return optimizer_->skips_on_device(); }
  void describe(nlohmann::json& finished) const override {
    optimizer_->describe(finished);
    if (!groups_.ep) return;
    std::int64_t held = 0;
    for (const auto& p : split_.experts) held += p.numel();
    finished["expert_parameters_on_this_rank"] = held;
  }

 protected:
  optim::StepOptimizer& optimizer() override { return *optimizer_; }

 private:
  torchrt::Distributed& data_;
  torchrt::Distributed& world_;
  const parallel::SplitModel& split_;
  const parallel::ParallelGroups& groups_;
  std::vector<torch::Tensor> shared_;  // every rank's same parameters: averaged over the data-parallel ranks
  std::unique_ptr<optim::StepOptimizer> optimizer_;
  optim::GradientTap* tap_ = nullptr;  // the optimizer's, where it takes the gradients as they come

  // The optimizer takes each gradient from the backward where nothing follows it, or each bucket's
  // sum where the reduction overlaps the backward; not with model parallelism (its parts are
  // reduced over other groups, or not at all), nor after a reduction that follows the backward.
  void attach_tap() {
    optim::GradientTap* tap = optimizer_->gradient_tap();
    if (!tap || groups_.tp || groups_.pipeline || groups_.ep) return;
    if (data_.world_size() == 1) {
      tap->from_backward();
    } else if (data_.overlapping()) {
      tap->from_buckets(data_.world_size());
      data_.on_bucket_started([tap](const torchrt::ReducedBucket& bucket) { tap->take_bucket(bucket); });
    } else {
      return;
    }
    tap_ = tap;
  }
};

class ZeroSync : public GradientSync {
 public:
  explicit ZeroSync(const SyncContext& ctx) {
    const int stage = static_cast<int>(ctx.settings.zero_stage);
    std::vector<torch::Tensor> trained;
    std::vector<bool> decays;
    for (const auto& p : ctx.split.params) {
      if (!p.requires_grad()) continue;
      trained.push_back(p);
      decays.push_back(optim::takes_weight_decay(ctx.settings.optimizer, p));
    }
    std::vector<torch::nn::Module*> blocks;
    const auto stacks = parallel::block_stacks(ctx.model);
    for (auto* stack : stacks)
      for (auto* block : stack->blocks()) blocks.push_back(block);
    if (stage == 3 && blocks.empty())
      throw ConfigError(ctx.settings.where("zero_stage").str() +
                        ": zero_stage: 3 shards the parameters of a model's blocks, and the model of " + ctx.case_name +
                        " has none; use zero_stage: 2");
    zero_ =
        std::make_unique<parallel::ZeroSharding>(ctx.data, trained, decays, stage, ctx.settings.bucket_bytes, blocks);
    if (stage == 3) {
      // The model outlives this run; the hooks come off (and the parameters back) when it ends.
      for (auto* stack : stacks)
        stack->set_block_hooks(std::shared_ptr<parallel::BlockHooks>(zero_.get(), [](parallel::BlockHooks*) {}));
      hooked_ = stacks;
    }
    shares_ = zero_->all_shares();
    optimizer_ = optim::make_optimizer(ctx.settings.optimizer, zero_->shares_with_decay(),
                                       zero_->shares_without_decay(), ctx.optimizer_impl);
  }
  ~ZeroSync() override {
    if (hooked_.empty()) return;
    for (auto* stack : hooked_) stack->set_block_hooks(nullptr);
    // Gathering is collective: not while an error unwinds this rank alone.
    if (std::uncaught_exceptions() == 0) zero_->gather_all();
  }
  void zero_grad() override { zero_->zero_grad(); }
  void begin_backward(bool last) override { zero_->begin_backward(last); }
  void end_backward() override { zero_->end_backward(); }
  void finish_step() override {}  // end_backward of the last micro-batch left the averaged shares
  const std::vector<torch::Tensor>& stepped() const override { return shares_; }
  torch::Tensor gradient_norm() override { return zero_->gradient_norm(); }
  std::function<void(torch::Tensor&)> overflow_agreement() override {
    return [this](torch::Tensor& found_inf) { zero_->reduce_max(found_inf); };
  }
  void step(const torch::Tensor& found_inf) override {
    optimizer_->step_unless(found_inf);  // the shares' optimizer skips on the device or not at all
    zero_->gather_parameters();
  }
  void gather_all() override { zero_->gather_all(); }
  void describe(nlohmann::json& finished) const override {
    optimizer_->describe(finished);
    finished["zero_owned_parameters"] = zero_->owned_elements();
  }

 protected:
  optim::StepOptimizer& optimizer() override { return *optimizer_; }

 private:
  std::unique_ptr<parallel::ZeroSharding> zero_;
  std::vector<parallel::BlockStack*> hooked_;  // stage 3: the stacks whose blocks ZeRO gathers
  std::vector<torch::Tensor> shares_;
  std::unique_ptr<optim::StepOptimizer> optimizer_;
};

}  // namespace

std::unique_ptr<GradientSync> make_gradient_sync(const SyncContext& ctx) {
  if (ctx.settings.zero_stage > 0) return std::make_unique<ZeroSync>(ctx);
  return std::make_unique<DataParallelSync>(ctx);
}

}  // namespace xpuperf::train
