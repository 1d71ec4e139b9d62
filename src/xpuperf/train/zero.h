#pragma once
// `zero_stage`: ZeRO (Rajbhandari et al., as DeepSpeed and Rapidformer name it) over the
// data-parallel ranks. The parameters are packed into flat units (buckets of `bucket_size_mb`, in
// the order backward produces their gradients); rank r owns the r-th 1/N of every unit.
//   stage 1  the optimizer's state is kept for the owned shares only: gradients accumulate in full,
//            each unit is reduce-scattered (not all-reduced) as soon as backward completes it, the
//            optimizer steps the owned shares and the units are all-gathered back;
//   stage 2  as 1, and the gradients are not kept in full either: each one is copied into its
//            unit's buffer as it arrives and dropped, and the buffer goes once reduce-scattered, so
//            a rank holds the gradients of its shares plus a unit or two in flight.
// (Stage 3, the parameters themselves sharded and gathered layer by layer, is not implemented.)
// The result is data parallelism's: the same averaged gradients, the same update.

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

#include "xpuperf/train/distributed.h"

namespace xpuperf::train {

class ZeroSharding {
 public:
  // Takes over `params` (all on one device, one dtype): they become views of the units, with the
  // values they had. `decays[k]`: whether params[k] takes weight decay.
  ZeroSharding(Distributed& dist, const std::vector<torch::Tensor>& params, const std::vector<bool>& decays, int stage,
               std::int64_t bucket_bytes);
  ~ZeroSharding();
  ZeroSharding(const ZeroSharding&) = delete;
  ZeroSharding& operator=(const ZeroSharding&) = delete;

  int stage() const { return stage_; }
  // This rank's shares, as tensors that alias the parameters, with .grad set to the reduced
  // gradient shares: what the optimizer steps. In two lists: with weight decay, without.
  const std::vector<torch::Tensor>& shares_with_decay() const { return decay_shares_; }
  const std::vector<torch::Tensor>& shares_without_decay() const { return no_decay_shares_; }
  std::vector<torch::Tensor> all_shares() const;

  // Before each micro-batch's backward; `last`: the step's last micro-batch, whose gradients are
  // sent (stage 1 sends only then; stage 2 sends every micro-batch's).
  void begin_backward(bool last);
  // After each micro-batch's backward: sends what backward did not reach and waits for the
  // reductions. After the last one, the shares' .grad hold the gradients averaged over ranks.
  void end_backward();
  // Zeroes the gradients for the next step.
  void zero_grad();
  // After the optimizer stepped the shares: every rank gets every unit's new values.
  void gather_parameters();
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
  void on_gradient(std::size_t param);
  void launch_ready();
  void finish_unit(std::size_t u);

  Distributed& dist_;
  int stage_;
  std::vector<torch::Tensor> params_;
  std::vector<std::unique_ptr<Unit>> units_;
  std::vector<std::size_t> unit_of_;                                  // per parameter
  std::vector<std::int64_t> offset_of_;                               // per parameter, in its unit
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // kept alive for their hooks
  std::vector<torch::Tensor> decay_shares_, no_decay_shares_;
  std::vector<char> arrived_;
  std::size_t next_launch_ = 0;
  bool sending_ = true;
  std::mutex mutex_;  // hooks may run on autograd's device threads
};

}  // namespace xpuperf::train
