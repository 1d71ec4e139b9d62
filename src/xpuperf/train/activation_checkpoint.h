#pragma once
// `activation_checkpointing: true`: a block's activations are not kept for backward; backward runs
// the block again (with the random state and autocast of the first run, so dropout draws the same
// masks) and then its backward. Memory for compute: one block's activations instead of all of them.
// LibTorch has no torch.utils.checkpoint; this is its reentrant form.

#include <torch/torch.h>

#include <functional>

namespace xpuperf::train {

using BlockFunction = std::function<torch::Tensor(const torch::Tensor&)>;

// block(x), recomputed in backward instead of keeping its activations. Without gradients (eval,
// no_grad) it is block(x). The parameters' gradients accumulate as without checkpointing; `block`
// must stay callable until backward has run (capture modules by pointer, not by reference).
torch::Tensor checkpointed(BlockFunction block, const torch::Tensor& x);

// A model with a stack of repeated blocks that can be checkpointed. The runtime switches it on
// (the cases never do): it finds every module of the model that is a CheckpointableBlocks.
class CheckpointableBlocks {
 public:
  virtual ~CheckpointableBlocks() = default;
  void set_activation_checkpointing(bool on) { checkpoint_blocks_ = on; }
  bool activation_checkpointing() const { return checkpoint_blocks_; }

 protected:
  // What the model's forward calls for each block.
  torch::Tensor run_block(BlockFunction block, const torch::Tensor& x) const {
    return checkpoint_blocks_ ? checkpointed(std::move(block), x) : block(x);
  }

 private:
  bool checkpoint_blocks_ = false;
};

// Switches checkpointing on or off in every CheckpointableBlocks module of `model`; returns how
// many there were (0: the model has no blocks to checkpoint).
int set_activation_checkpointing(torch::nn::Module& model, bool on);

}  // namespace xpuperf::train
