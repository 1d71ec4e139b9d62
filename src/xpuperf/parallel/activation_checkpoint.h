#pragma once
// `activation_checkpointing: true`: a block's activations are not kept for backward; backward runs
// the block again (with the random state and autocast of the first run, so dropout draws the same
// masks) and then its backward. Memory for compute: one block's activations instead of all of them.
// LibTorch has no torch.utils.checkpoint; this is its reentrant form.

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

namespace xpuperf::parallel {

using BlockFunction = std::function<torch::Tensor(const torch::Tensor&)>;

// block(x), recomputed in backward instead of keeping its activations. Without gradients (eval,
// no_grad) it is block(x). The parameters' gradients accumulate as without checkpointing; `block`
// must stay callable until backward has run (capture modules by pointer, not by reference).
torch::Tensor checkpointed(BlockFunction block, const torch::Tensor& x);

// What the runtime wraps around each block's forward: ZeRO-3 gathers the block's parameters
// before it and frees them after (and the reverse in backward).
class BlockHooks {
 public:
  virtual ~BlockHooks() = default;
  virtual torch::Tensor run(torch::nn::Module& block, const BlockFunction& forward, const torch::Tensor& x) = 0;
};

// A model's stack of repeated blocks (transformer layers), which the runtime's switches act on —
// the cases never do: checkpointing recomputes them, ZeRO-3 shards their parameters. The runtime
// finds every module of the model that is a BlockStack.
class BlockStack {
 public:
  virtual ~BlockStack() = default;
  // The blocks, in forward order.
  virtual std::vector<torch::nn::Module*> blocks() = 0;
  void set_activation_checkpointing(bool on) { checkpoint_blocks_ = on; }
  bool activation_checkpointing() const { return checkpoint_blocks_; }
  void set_block_hooks(std::shared_ptr<BlockHooks> hooks) { hooks_ = std::move(hooks); }
  // Whether run_block does more than call the block (checkpointing or hooks are set).
  bool wraps_blocks() const { return checkpoint_blocks_ || hooks_ != nullptr; }

 protected:
  // What the model's forward calls for each block: forward(x), checkpointed and hooked as set.
  torch::Tensor run_block(torch::nn::Module& block, BlockFunction forward, const torch::Tensor& x) const {
    if (checkpoint_blocks_) forward = [f = std::move(forward)](const torch::Tensor& t) { return checkpointed(f, t); };
    return hooks_ ? hooks_->run(block, forward, x) : forward(x);
  }

 private:
  bool checkpoint_blocks_ = false;
  std::shared_ptr<BlockHooks> hooks_;
};

// The BlockStack modules of `model` (none: the model has no blocks).
std::vector<BlockStack*> block_stacks(torch::nn::Module& model);
// Switches checkpointing on or off in every BlockStack of `model`; returns how many there were
// (0: the model has no blocks to checkpoint).
int set_activation_checkpointing(torch::nn::Module& model, bool on);

}  // namespace xpuperf::parallel
