#pragma once
// `offload_optimizer: true`, ZeRO-Offload's idea (Ren et al., 2021) as a StepOptimizer: the
// optimizer's state — fp32 master weights and Adam's two moments, 12 bytes a parameter — lives in
// host memory (pinned, where a GPU copies from it) instead of the accelerator's. A step copies the
// gradients to the host, runs the Adam / AdamW update there on every core (cpu_adam.h's loop,
// vectorised, in pieces over the rank's threads), and copies the weights back in the parameters' own
// type. With `precision: bf16` on a GPU the parameters (and so their gradients) are kept in bf16
// on the device: 4 bytes a parameter there instead of 16 for weights, gradients and state in fp32.
// Their gradients then travel to the host in bf16 and the weights back in bf16 (rounded on the host
// as ATen's cast), through one pinned buffer of 2 bytes a parameter: 14 bytes a parameter of host
// memory, and half the bytes each way over the bus, against a float gradient in and a float master out.
// The update is torch::optim's Adam / AdamW, operation for operation (tests hold the loss to it).
//
// `offload_overlap: true` runs each step's host update on a thread of its own while the next step's
// forward and backward run, and brings its weights to the device at the start of the step after
// (ZeRO-Offload's delayed parameter update): a step's gradients are those of the weights one update
// behind. The first steps stay synchronous, while the loss falls fastest.
//
// `offload_stream_gradients: true` (the default) sends the gradients to the host while the step's
// last backward runs, on a copy stream of its own beside the backward's kernels, instead of all of
// them after it (the optimizer's GradientTap, which the data-parallel sync drives): on one rank each
// gradient as the backward makes it (a hook on its parameter); on several, each bucket's sum over
// the ranks as its overlapped all-reduce starts, divided by the ranks in the host's update. Not with
// tensor, pipeline or expert parallelism, nor fp16 (the loss scale comes off the gradients after the
// backward), nor offload_overlap (whose update still reads the exchange buffer while the next
// backward runs). A gradient that arrives twice in one backward, or not at all, is copied after it as
// before. Gradient clipping runs on the host, in the update: the device's gradients are never
// rescaled (clip_in_step).

#include <cstdint>
#include <memory>
#include <vector>

#include "xpuperf/optim/optimizers.h"

namespace xpuperf::optim {

struct AdamHyper {
  bool decoupled = true;  // AdamW (decay applied to the weight) or Adam (added to the gradient)
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

struct OffloadOverlap {
  bool enabled = false;
  std::int64_t synchronous_steps = 10;  // steps updated in place before the overlap starts
};

// `with_decay` / `without_decay`: the parameters (on any device) and their weight decay groups;
// `device_bf16`: store the device parameters in bf16 from now on (the master copy stays fp32).
// `stream_gradients`: the hooks above (taken only without overlap).
std::unique_ptr<StepOptimizer> make_offload_adam(const AdamHyper& h, double weight_decay,
                                                 std::vector<torch::Tensor> with_decay,
                                                 std::vector<torch::Tensor> without_decay, bool device_bf16,
                                                 OffloadOverlap overlap = {}, bool stream_gradients = false);

}  // namespace xpuperf::optim
