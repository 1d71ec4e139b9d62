#pragma once
// `zero_stage`: ZeRO (Rajbhandari et al., as DeepSpeed and Rapidformer name it) over the
// data-parallel ranks. The parameters are packed into flat units (buckets of `bucket_size_mb`, in
// the order backward produces their gradients); rank r owns the r-th 1/N of every unit.
//   stage 1  the optimizer's state is kept for the owned shares only: gradients accumulate in full,
//            each unit is reduce-scattered (not all-reduced) as soon as backward completes it, the
//            optimizer steps the owned shares and the units are all-gathered back;
//   stage 2  as 1, and the gradients are not kept in full either: each one is copied into its
//            unit's buffer as it arrives and dropped, and the buffer goes once reduce-scattered, so
//            a rank holds the gradients of its shares plus a unit or two in flight;
//   stage 3  as 2, and each block of the model's BlockStack (a transformer layer) is a unit whose
//            parameters are kept as shares only: all-gathered just before the block's forward and
//            freed after it, gathered again before its backward and freed after (FSDP's full
//            shard). The parameters outside the blocks (embeddings, final norm, head) stay
//            gathered, sharded as in stage 2.
// The result is data parallelism's: the same averaged gradients, the same update.

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "xpuperf/parallel/activation_checkpoint.h"
#include "xpuperf/torchrt/distributed.h"

namespace xpuperf::parallel {

class ZeroSharding : public BlockHooks {
 public:
  // Takes over `params` (all on one device, one dtype): they become views of the units, with the
  // values they had. `decays[k]`: whether params[k] takes weight decay. Stage 3: `blocks` are the
  // model's blocks (each becomes a unit of its parameters); install this as their stack's hooks.
  ZeroSharding(torchrt::Distributed& dist, const std::vector<torch::Tensor>& params, const std::vector<bool>& decays,
               int stage, std::int64_t bucket_bytes, const std::vector<torch::nn::Module*>& blocks = {});
  ~ZeroSharding() override;
  ZeroSharding(const ZeroSharding&) = delete;
  ZeroSharding& operator=(const ZeroSharding&) = delete;

  int stage() const { return stage_; }
  // This rank's shares, as tensors that alias the parameters (stage 3's blocks: the kept shares),
  // with .grad set to the reduced gradient shares: what the optimizer steps. In two lists: with
  // weight decay, without.
  const std::vector<torch::Tensor>& shares_with_decay() const { return decay_shares_; }
  const std::vector<torch::Tensor>& shares_without_decay() const { return no_decay_shares_; }
  std::vector<torch::Tensor> all_shares() const;

  // Before each micro-batch's backward; `last`: the step's last micro-batch, whose gradients are
  // sent (stage 1 sends only then; stages 2 and 3 send every micro-batch's).
  void begin_backward(bool last);
  // After each micro-batch's backward: sends what backward did not reach and waits for the
  // reductions. After the last one, the shares' .grad hold the gradients averaged over ranks.
  void end_backward();
  // Zeroes the gradients for the next step.
  void zero_grad();
  // After the optimizer stepped the shares: every rank gets every unit's new values (stage 3's
  // blocks get theirs when they next run).
  void gather_parameters();
  // Stage 3: every block's parameters gathered (to save the model), and freed again.
  void gather_all();
  void release_all();
  // BlockHooks: stage 3's gathering around a block.
  torch::Tensor run(torch::nn::Module& block, const BlockFunction& forward, const torch::Tensor& x) override;
  // Stage 3: unit `u`'s parameters gathered / freed (the autograd functions around blocks call these).
  void gather(std::size_t u);
  void release(std::size_t u);

  // The global L2 norm of the averaged gradients (sums this rank's shares over the ranks).
  torch::Tensor gradient_norm();
  // Largest over ranks, in place (the loss scaler's inf check).
  void reduce_max(torch::Tensor& t) { dist_.all_reduce_max(t); }

  // Elements this rank keeps optimizer state for, and all elements (for tests and logs).
  std::int64_t owned_elements() const;
  std::int64_t total_elements() const;
  std::size_t unit_count() const;

  struct Unit;

 private:
  void add_unit(const std::vector<std::size_t>& members, bool sharded, const std::vector<bool>& decays);
  void on_gradient(std::size_t param);
  void launch_ready();
  void finish_unit(std::size_t u);

  torchrt::Distributed& dist_;
  int stage_;
  std::vector<torch::Tensor> params_;
  std::vector<std::unique_ptr<Unit>> units_;
  std::vector<std::size_t> unit_of_;                        // per parameter
  std::vector<std::int64_t> offset_of_;                     // per parameter, in its unit
  std::vector<std::vector<std::int64_t>> sizes_, strides_;  // per parameter, as they were
  std::map<const torch::nn::Module*, std::size_t> unit_of_block_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // kept alive for their hooks
  std::vector<torch::Tensor> decay_shares_, no_decay_shares_;
  std::vector<char> arrived_;
  std::size_t next_launch_ = 0;
  bool sending_ = true;
  std::mutex mutex_;  // hooks may run on autograd's device threads
};

}  // namespace xpuperf::parallel
