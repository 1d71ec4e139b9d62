#include "xpuperf/models/batch_norm_act.h"

#include "xpuperf/ops/composite.h"

namespace xpuperf::models::fused {

torch::Tensor batch_norm_act(const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& residual,
                             Activation act, bool use_kernels) {
  const auto& o = bn.options;
  // A cumulative average (no momentum) is bn's own forward's to keep.
  if (!use_kernels || !o.momentum().has_value()) return ops::composite::add_activate(bn.forward(x), residual, act);
  // As bn's forward: the count of batches, and the batch's statistics in training or without running ones.
  const bool tracks = o.track_running_stats();
  if (bn.is_training() && tracks) bn.num_batches_tracked.add_(1);
  return ops::batch_norm_act(x, bn.weight, bn.bias, tracks ? bn.running_mean : torch::Tensor(),
                             tracks ? bn.running_var : torch::Tensor(), residual, act, bn.is_training() || !tracks,
                             *o.momentum(), o.eps());
}

}  // namespace xpuperf::models::fused
