#pragma once
// The optimizer step, in three implementations a config chooses with `fused_optimizer`:
//   off      LibTorch's torch::optim (one small kernel per parameter and operation),
//   foreach  multi-tensor: each operation over all parameters at once (ATen's _foreach_ ops),
//   fused    one kernel for the whole update (ATen's _fused_sgd_ / _fused_adamw_, LibTorch 2.x).
// All three compute the same update; tests hold them to the same loss. `offload_optimizer: true`
// replaces them with Adam / AdamW on the host (offload_optimizer.h).
//
// `bf16_weights: true` (precision bf16, Adam or AdamW, foreach or fused): the weights of the model's
// products (torchrt/product_weights.h: its Linear layers', a mixture of experts') are kept in bf16 on
// the device, their fp32 masters and moments in the optimizer, and the step updates the masters from
// the bf16 gradients and rounds them into the weights (with fused, xpuperf's master_adam_step
// operator a tensor: NVIDIA's kernel, vendors/nvidia/plugin/kernels/master_adam.h). Autocast would
// cast those weights to bf16 in every forward and their gradients back to float: the same products,
// without those passes and the float gradients. Megatron's bf16 training keeps its weights so too.

#include <torch/torch.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "xpuperf/optim/optimizer_settings.h"

namespace xpuperf::torchrt {
struct ReducedBucket;  // torchrt/distributed.h
}

namespace xpuperf::optim {

enum class OptimizerImpl { Reference, Foreach, Fused };

// "off", "foreach", "fused"; throws ConfigError naming the config line otherwise, or when the
// fused kernels are missing (LibTorch 1.13, or SGD/AdamW fused on a device without them).
OptimizerImpl parse_optimizer_impl(const OptimizerSettings& settings, const torch::Device& device);
const char* optimizer_impl_name(OptimizerImpl impl);

// How an optimizer takes a step's gradients as they are made, before step(): the data-parallel sync
// says once where they will come from and drives it each step. Without it, step() reads .grad.
class GradientTap {
 public:
  virtual ~GradientTap() = default;
  // From the backward itself: nothing reduces or rescales them after it (one rank, no model
  // parallelism). Each gradient comes from its parameter's hook.
  virtual void from_backward() = 0;
  // From the overlapped reduction of `ranks` data-parallel ranks: each bucket's sum as its all-reduce
  // starts (take_bucket), to be divided by `ranks`.
  virtual void from_buckets(int ranks) = 0;
  // Before each micro-batch's backward; `last`: the step's last (the one whose gradients are taken).
  virtual void begin_backward(bool last) = 0;
  virtual void take_bucket(const torchrt::ReducedBucket& bucket) = 0;
  // The step's gradients changed after they were taken (the reduction fell back to reducing .grad
  // again): take none of this step's; step() reads them all.
  virtual void forget_step() = 0;
};

class StepOptimizer {
 public:
  virtual ~StepOptimizer() = default;
  virtual void set_lr(double lr) = 0;
  virtual void zero_grad() = 0;
  virtual void step() = 0;
  // Whether step_unless can leave a step undone on the device (the fused Adam kernels read the
  // flag), so that the fp16 loss scaler need not wait for the device to decide.
  virtual bool skips_on_device() const { return false; }
  // The step, left undone where found_inf (a float of one element on the device) is not 0.
  virtual void step_unless(const torch::Tensor& found_inf);
  // Gradient clipping inside the next step where the step can take it (the fused Adam kernels'
  // grad_scale: each gradient divided by max(norm / max_norm, 1) as it is read, instead of a pass of
  // its own over every gradient first); false where the caller must clip first (clip_gradients).
  // `norm`: gradient_norm's device tensor.
  virtual bool clip_in_step(const torch::Tensor& norm, double max_norm) {
    (void)norm, (void)max_norm;
    return false;
  }
  // Where the optimizer takes the step's gradients before step() (the offloaded one streams them to
  // the host): null where it does not.
  virtual GradientTap* gradient_tap() { return nullptr; }
  // Applies an update still running beside the next step (offload_overlap), so that the weights are
  // the ones every step so far gives: before an evaluation, a checkpoint, the end of a run.
  virtual void flush() {}
  // bf16_weights: puts the fp32 masters back as the parameters, so that what is saved and reported
  // after training is the full-precision weights; the optimizer steps no more after it.
  virtual void write_master_weights() {}
  // What FINISHED says of it (offload: where its host time went).
  virtual void describe(nlohmann::json& finished) const { (void)finished; }
};

// The optimizer the settings ask for (sgd, adam, adamw; lr, momentum, weight_decay, betas, eps).
// weight_decay_skip_1d leaves biases and normalisation weights (the parameters of one dimension)
// out of weight decay, as the ResNet-50 v1.5 and ViT recipes do.
std::unique_ptr<StepOptimizer> make_optimizer(const OptimizerSettings& settings, torch::nn::Module& model,
                                              OptimizerImpl impl);
// The same over given tensors (ZeRO's shares), already split by weight decay.
std::unique_ptr<StepOptimizer> make_optimizer(const OptimizerSettings& settings, std::vector<torch::Tensor> with_decay,
                                              std::vector<torch::Tensor> without_decay, OptimizerImpl impl);
// Whether `param` takes weight decay (weight_decay_skip_1d leaves 1-D ones out).
bool takes_weight_decay(const OptimizerSettings& settings, const torch::Tensor& param);

// The gradients' global L2 norm, as a device tensor (no synchronisation).
torch::Tensor gradient_norm(const std::vector<torch::Tensor>& params);
// Scales the gradients so their global norm (`norm`, from gradient_norm) is at most `max_norm`,
// as torch.nn.utils.clip_grad_norm_ does, without waiting for the device.
void clip_gradients(const std::vector<torch::Tensor>& params, const torch::Tensor& norm, double max_norm);

}  // namespace xpuperf::optim
