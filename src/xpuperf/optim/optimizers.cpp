#include "xpuperf/optim/optimizers.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "xpuperf/ops/operators.h"
#include "xpuperf/optim/offload_optimizer.h"
#include "xpuperf/torchrt/compat.h"
#include "xpuperf/torchrt/product_weights.h"

namespace xpuperf::optim {
namespace {

struct Hyper {
  std::string name;  // sgd, adam, adamw
  double lr = 0, weight_decay = 0, momentum = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

Hyper hyper_of(const OptimizerSettings& s) {
  return {s.name, s.lr, s.weight_decay, s.momentum, s.beta1, s.beta2, s.eps};
}

// Parameters in two groups: with weight decay, and without (1-D ones when asked); with
// `bf16_weights`, each split again into the weights kept in bf16 with fp32 masters and the rest.
struct Groups {
  std::vector<torch::Tensor> decay, no_decay;
  std::vector<torch::Tensor> decay_bf16, no_decay_bf16;
};

Groups split_params(const OptimizerSettings& s, torch::nn::Module& model) {
  std::unordered_set<const void*> bf16;
  if (s.bf16_weights)
    for (const auto& w : torchrt::product_weights(model)) bf16.insert(w.unsafeGetTensorImpl());
  Groups g;
  for (const auto& p : model.parameters()) {
    if (!p.requires_grad()) continue;
    const bool decay = takes_weight_decay(s, p);
    if (bf16.count(p.unsafeGetTensorImpl()))
      (decay ? g.decay_bf16 : g.no_decay_bf16).push_back(p);
    else
      (decay ? g.decay : g.no_decay).push_back(p);
  }
  return g;
}

// LibTorch's own optimizers, one parameter group per weight-decay setting.
class ReferenceOptimizer : public StepOptimizer {
 public:
  ReferenceOptimizer(const Hyper& h, const Groups& groups) {
    auto options = [&](double wd) -> std::unique_ptr<torch::optim::OptimizerOptions> {
      if (h.name == "sgd")
        return std::make_unique<torch::optim::SGDOptions>(
            torch::optim::SGDOptions(h.lr).momentum(h.momentum).weight_decay(wd));
      if (h.name == "adam")
        return std::make_unique<torch::optim::AdamOptions>(
            torch::optim::AdamOptions(h.lr).betas({h.beta1, h.beta2}).eps(h.eps).weight_decay(wd));
      return std::make_unique<torch::optim::AdamWOptions>(
          torch::optim::AdamWOptions(h.lr).betas({h.beta1, h.beta2}).eps(h.eps).weight_decay(wd));
    };
    std::vector<torch::optim::OptimizerParamGroup> list;
    if (!groups.decay.empty()) list.emplace_back(groups.decay, options(h.weight_decay));
    if (!groups.no_decay.empty()) list.emplace_back(groups.no_decay, options(0.0));
    if (h.name == "sgd")
      optimizer_ = std::make_unique<torch::optim::SGD>(list, torch::optim::SGDOptions(h.lr));
    else if (h.name == "adam")
      optimizer_ = std::make_unique<torch::optim::Adam>(list, torch::optim::AdamOptions(h.lr));
    else
      optimizer_ = std::make_unique<torch::optim::AdamW>(list, torch::optim::AdamWOptions(h.lr));
  }
  void set_lr(double lr) override {
    for (auto& group : optimizer_->param_groups()) group.options().set_lr(lr);
  }
  void zero_grad() override { optimizer_->zero_grad(); }
  void step() override { optimizer_->step(); }

 private:
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

// State and gradients of one weight-decay group, as lists for the multi-tensor kernels.
struct GroupState {
  std::vector<torch::Tensor> params;
  double weight_decay = 0;
  std::vector<torch::Tensor> buf1, buf2;  // momentum, or Adam's first and second moments
  std::vector<torch::Tensor> steps;       // the fused Adam kernels count steps in tensors
  // bf16_weights: the params are bf16 and these their fp32 masters, which the step updates and rounds
  // into them.
  std::vector<torch::Tensor> masters;
  std::vector<torch::Tensor> grads() const {
    std::vector<torch::Tensor> g;
    g.reserve(params.size());
    for (const auto& p : params) g.push_back(p.grad());
    return g;
  }
};

// Keeps a group's parameters in bf16 from now on, with fp32 masters of their values.
void keep_bf16_with_masters(GroupState& g) {
  torch::NoGradGuard no_grad;
  for (auto& p : g.params) {
    g.masters.push_back(p.detach().to(torch::kFloat, /*non_blocking=*/false, /*copy=*/true));
    p.set_data(p.detach().to(torch::kBFloat16));
  }
}

// The update of torch::optim's SGD, Adam and AdamW, with every operation over all the
// parameters of a group at once: a few kernels per step instead of a few per parameter.
class MultiTensorOptimizer : public StepOptimizer {
 public:
  MultiTensorOptimizer(const Hyper& h, const Groups& groups, bool fused) : h_(h), lr_(h.lr), fused_(fused) {
    if (!groups.decay.empty()) groups_.push_back(GroupState{groups.decay, h.weight_decay, {}, {}, {}, {}});
    if (!groups.no_decay.empty()) groups_.push_back(GroupState{groups.no_decay, 0.0, {}, {}, {}, {}});
    for (auto* list : {&groups.decay_bf16, &groups.no_decay_bf16}) {
      if (list->empty()) continue;
      TORCH_CHECK(h.name != "sgd", "bf16_weights: the masters are Adam's and AdamW's");
      groups_.push_back(GroupState{*list, list == &groups.decay_bf16 ? h.weight_decay : 0.0, {}, {}, {}, {}});
      keep_bf16_with_masters(groups_.back());
    }
  }
  void set_lr(double lr) override { lr_ = lr; }
  // Gradients to none, as torch.optim's zero_grad does: the next backward's gradient becomes .grad as
  // autograd made it, where a zeroed .grad costs a fill and an add of every weight each step.
  void zero_grad() override {
    for (auto& g : groups_)
      for (auto& p : g.params) p.mutable_grad() = torch::Tensor();
  }
  void step() override { step_unless(torch::Tensor()); }
  bool skips_on_device() const override { return fused_ && h_.name != "sgd"; }
  bool clip_in_step(const torch::Tensor& norm, double max_norm) override {
    // With masters, always: clip_gradients would scale the bf16 gradients in bf16.
    if ((!fused_ && !keeps_masters()) || h_.name == "sgd") return false;
    // clip_gradients multiplies by min(max_norm / (norm + 1e-6), 1); the kernels divide by this.
    const torch::NoGradGuard no_grad;
    divisor_ = torch::clamp_min((norm.to(torch::kFloat) + 1e-6) / max_norm, 1.0).reshape({});
    return true;
  }
  void step_unless(const torch::Tensor& found_inf) override {
    TORCH_CHECK(!found_inf.defined() || skips_on_device(), "this optimizer cannot skip a step on the device");
    torch::NoGradGuard no_grad;
    ++step_;
    for (auto& g : groups_) {
      for (auto& p : g.params) {
        // A parameter that took part in the first step and not in this one steps on a zero gradient, as
        // it did when zero_grad zeroed the gradients.
        if (!p.grad().defined() && step_ > 1) p.mutable_grad() = torch::zeros_like(p);
        TORCH_CHECK(p.grad().defined(), "a parameter has no gradient: every parameter must take part in the loss");
      }
      if (h_.name == "sgd")
        sgd(g);
      else
        adam(g, found_inf);
    }
    divisor_ = torch::Tensor();  // for this step only
  }
  void write_master_weights() override {
    torch::NoGradGuard no_grad;
    for (auto& g : groups_)
      for (std::size_t i = 0; i < g.masters.size(); ++i) g.params[i].set_data(g.masters[i]);
  }

 private:
  // Whether some groups keep bf16 weights with fp32 masters (bf16_weights).
  bool keeps_masters() const {
    return std::any_of(groups_.begin(), groups_.end(), [](const GroupState& g) { return !g.masters.empty(); });
  }

  void sgd(GroupState& g) {
    auto grads = g.grads();
    const bool first = g.buf1.empty() && h_.momentum != 0;
    if (fused_ && compat::kHasFusedOptimizers) {
      if (first)
        for (const auto& p : g.params) g.buf1.push_back(torch::empty_like(p));
      compat::fused_sgd_(g.params, grads, h_.momentum != 0 ? at::TensorList(g.buf1) : at::TensorList(), g.weight_decay,
                         h_.momentum, lr_, first);
      return;
    }
    if (g.weight_decay != 0) grads = at::_foreach_add(grads, g.params, g.weight_decay);
    if (h_.momentum != 0) {
      if (first) {
        for (const auto& d : grads) g.buf1.push_back(d.clone().detach());
      } else {
        at::_foreach_mul_(g.buf1, h_.momentum);
        at::_foreach_add_(g.buf1, grads, 1.0);
      }
      grads = g.buf1;
    }
    at::_foreach_add_(g.params, grads, -lr_);
  }

  // bf16_weights: the update of the fp32 masters from the bf16 gradients, each master then rounded
  // into its bf16 weight. With `fused` where the device has a kernel for xpuperf's master_adam_step (NVIDIA's:
  // one kernel a tensor, vendors/nvidia/plugin/kernels/master_adam.h), that operator a tensor; else the
  // foreach step on the masters and the gradients in float, then a copy (the same arithmetic).
  void master_adam(GroupState& g) {
    if (g.buf1.empty())
      for (const auto& m : g.masters) {
        g.buf1.push_back(torch::zeros_like(m));
        g.buf2.push_back(torch::zeros_like(m));
      }
    if (fused_ && ops::has_kernel("master_adam_step", g.params.front().device().type())) {
      ops::MasterAdamStep step;
      step.lr = lr_, step.beta1 = h_.beta1, step.beta2 = h_.beta2, step.eps = h_.eps;
      step.weight_decay = g.weight_decay, step.decoupled = h_.name == "adamw";
      step.bias_correction1 = 1.0 - std::pow(h_.beta1, static_cast<double>(step_));
      step.bias_correction2_sqrt = std::sqrt(1.0 - std::pow(h_.beta2, static_cast<double>(step_)));
      const auto divisor = divisor_.defined() ? divisor_.to(torch::kFloat).contiguous() : torch::Tensor();
      for (std::size_t i = 0; i < g.params.size(); ++i) {
        auto grad = g.params[i].grad();
        if (!grad.is_contiguous()) grad = grad.contiguous();  // a product's transposed weight gives it back strided
        ops::master_adam_step(g.masters[i], g.buf1[i], g.buf2[i], grad, g.params[i], step, divisor);
      }
      return;
    }
    std::vector<torch::Tensor> grads;
    for (const auto& p : g.params) {
      auto grad = p.grad().to(torch::kFloat);
      if (divisor_.defined()) grad.div_(divisor_.to(torch::kFloat));
      grads.push_back(grad);
    }
    foreach_adam(g, g.masters, std::move(grads));
    for (std::size_t i = 0; i < g.params.size(); ++i) g.params[i].copy_(g.masters[i]);
  }

  // torch::optim's Adam / AdamW update of `weights` (a group's parameters or their masters) from
  // `grads`, each operation over the whole group at once.
  void foreach_adam(GroupState& g, std::vector<torch::Tensor>& weights, std::vector<torch::Tensor> grads) {
    if (g.weight_decay != 0) {
      if (h_.name == "adamw")
        at::_foreach_mul_(weights, 1.0 - lr_ * g.weight_decay);
      else
        grads = at::_foreach_add(grads, weights, g.weight_decay);
    }
    at::_foreach_mul_(g.buf1, h_.beta1);
    at::_foreach_add_(g.buf1, grads, 1.0 - h_.beta1);
    at::_foreach_mul_(g.buf2, h_.beta2);
    at::_foreach_addcmul_(g.buf2, grads, grads, 1.0 - h_.beta2);
    const double correction1 = 1.0 - std::pow(h_.beta1, static_cast<double>(step_));
    const double correction2 = 1.0 - std::pow(h_.beta2, static_cast<double>(step_));
    auto denom = at::_foreach_sqrt(g.buf2);
    at::_foreach_div_(denom, std::sqrt(correction2));
    at::_foreach_add_(denom, h_.eps);
    at::_foreach_addcdiv_(weights, g.buf1, denom, -lr_ / correction1);
  }

  void adam(GroupState& g, [[maybe_unused]] const torch::Tensor& found_inf) {
    if (!g.masters.empty()) {
      TORCH_CHECK(!found_inf.defined(), "bf16_weights: no loss scaler in bf16");
      master_adam(g);
      return;
    }
    auto grads = g.grads();
    // Where the step clips (bf16_weights' groups beside these), the foreach path divides here too.
    if (divisor_.defined() && !fused_)
      for (auto& grad : grads) grad = grad / divisor_.to(grad.scalar_type());
    if (g.buf1.empty()) {
      for (const auto& p : g.params) {
        g.buf1.push_back(torch::zeros_like(p, at::MemoryFormat::Preserve));
        g.buf2.push_back(torch::zeros_like(p, at::MemoryFormat::Preserve));
        if (fused_) g.steps.push_back(torch::zeros({}, p.options().dtype(torch::kFloat)));
      }
    }
    if (fused_ && compat::kHasFusedOptimizers) {
      const bool decoupled = h_.name == "adamw";
      at::_foreach_add_(g.steps, 1.0);
      // With a flag, the kernels leave everything as it was where it is set, and the step counts
      // are taken back (as PyTorch's fused Adam does under a GradScaler).
      const c10::optional<at::Tensor> flag =
          found_inf.defined() ? c10::optional<at::Tensor>(found_inf) : c10::optional<at::Tensor>();
      const c10::optional<at::Tensor> divisor =
          divisor_.defined() ? c10::optional<at::Tensor>(divisor_) : c10::optional<at::Tensor>();
      compat::fused_adam_(decoupled, g.params, grads, g.buf1, g.buf2, g.steps, lr_, h_.beta1, h_.beta2, g.weight_decay,
                          h_.eps, /*grad_scale=*/divisor, flag);
      if (flag) at::_foreach_sub_(g.steps, std::vector<at::Tensor>(g.steps.size(), found_inf.reshape({})));
      return;
    }
    foreach_adam(g, g.params, std::move(grads));
  }

  Hyper h_;
  double lr_;
  bool fused_;
  std::int64_t step_ = 0;
  std::vector<GroupState> groups_;
  torch::Tensor divisor_;  // clip_in_step's, for the next step's kernels
};

}  // namespace

void StepOptimizer::step_unless(const torch::Tensor& found_inf) {
  TORCH_CHECK(!found_inf.defined(), "this optimizer cannot skip a step on the device");
  step();
}

namespace {
// The defined gradients of params, float ones apart from the others (each group in one dtype).
struct GradientGroups {
  std::vector<torch::Tensor> float_grads, other_grads;
};
GradientGroups gradient_groups(const std::vector<torch::Tensor>& params) {
  GradientGroups g;
  for (const auto& p : params)
    if (p.grad().defined())
      (p.grad().scalar_type() == torch::kFloat ? g.float_grads : g.other_grads).push_back(p.grad().detach());
  return g;
}
}  // namespace

torch::Tensor gradient_norm(const std::vector<torch::Tensor>& params) {
  const GradientGroups g = gradient_groups(params);
  // Float gradients (the fp32 master weights' under autocast) in a few multi-tensor launches instead
  // of one reduction a tensor; the others one by one, in float, so a bf16 gradient's norm keeps its digits.
  std::vector<torch::Tensor> norms =
      g.float_grads.empty() ? std::vector<torch::Tensor>() : at::_foreach_norm(g.float_grads, 2);
  // bf16 gradients (bf16_weights' weights) in multi-tensor launches too where LibTorch has them,
  // reduced in float.
  std::vector<torch::Tensor> bf16;
  for (const auto& grad : g.other_grads)
    if (grad.scalar_type() == torch::kBFloat16) bf16.push_back(grad);
  for (const auto& n : compat::float_norms(bf16)) norms.push_back(n);
  for (const auto& grad : g.other_grads)
    if (grad.scalar_type() != torch::kBFloat16) norms.push_back(grad.to(torch::kFloat).norm());
  if (norms.empty()) return torch::zeros({});
  return torch::stack(norms).norm();
}

void clip_gradients(const std::vector<torch::Tensor>& params, const torch::Tensor& norm, double max_norm) {
  torch::NoGradGuard no_grad;
  const auto coefficient = torch::clamp_max(max_norm / (norm + 1e-6), 1.0);
  GradientGroups g = gradient_groups(params);
  // One multi-tensor launch for the float gradients where LibTorch has it, the coefficient read on the
  // device (no sync).
  compat::mul_each_(g.float_grads, coefficient.to(torch::kFloat));
  for (auto& grad : g.other_grads) grad.mul_(coefficient.to(grad.dtype()));
}

OptimizerImpl parse_optimizer_impl(const OptimizerSettings& s, const torch::Device& device) {
  const std::string& text = s.implementation;
  const auto where = [&] { return s.implementation_source.str() + ": "; };
  if (text == "off" || text == "false") return OptimizerImpl::Reference;
  if (text == "foreach") return OptimizerImpl::Foreach;
  if (text != "fused" && text != "true")
    throw ConfigError(where() + "'fused_optimizer' must be off, foreach or fused, got '" + text + "'");
  if (!compat::kTorch2)
    throw ConfigError(where() + "fused_optimizer: fused needs LibTorch 2.x (this build has " + TORCH_VERSION +
                      "); use foreach, the multi-tensor step");
  if (!device.is_cuda())
    throw ConfigError(where() + "fused_optimizer: fused runs on CUDA devices; use foreach on " + device.str());
  return OptimizerImpl::Fused;
}

const char* optimizer_impl_name(OptimizerImpl impl) {
  switch (impl) {
    case OptimizerImpl::Reference:
      return "off";
    case OptimizerImpl::Foreach:
      return "foreach";
    case OptimizerImpl::Fused:
      return "fused";
  }
  return "off";
}

bool takes_weight_decay(const OptimizerSettings& s, const torch::Tensor& param) {
  return !(s.weight_decay_skip_1d && param.dim() <= 1);
}

std::unique_ptr<StepOptimizer> make_optimizer(const OptimizerSettings& s, torch::nn::Module& model,
                                              OptimizerImpl impl) {
  const Groups groups = split_params(s, model);
  if (groups.decay_bf16.empty() && groups.no_decay_bf16.empty())
    return make_optimizer(s, groups.decay, groups.no_decay, impl);
  if (impl == OptimizerImpl::Reference || s.offload)
    throw ConfigError(s.bf16_weights_source.str() +
                      ": bf16_weights needs fused_optimizer: fused or foreach, and no offload_optimizer");
  return std::make_unique<MultiTensorOptimizer>(hyper_of(s), groups, impl == OptimizerImpl::Fused);
}

std::unique_ptr<StepOptimizer> make_optimizer(const OptimizerSettings& s, std::vector<torch::Tensor> with_decay,
                                              std::vector<torch::Tensor> without_decay, OptimizerImpl impl) {
  const Hyper h = hyper_of(s);
  if (s.offload) {
    if (h.name == "sgd")
      throw ConfigError(s.offload_source.str() +
                        ": offload_optimizer keeps Adam's state on the host; optimizer sgd has none to offload");
    const AdamHyper adam{h.name == "adamw", h.lr, h.beta1, h.beta2, h.eps};
    OffloadOverlap overlap;
    overlap.enabled = s.offload_overlap;
    // The device keeps bf16 weights where the step computes in bf16; the host the fp32 masters.
    return make_offload_adam(adam, h.weight_decay, std::move(with_decay), std::move(without_decay), s.device_bf16,
                             overlap, s.offload_streams);
  }
  const Groups groups{std::move(with_decay), std::move(without_decay), {}, {}};
  if (impl == OptimizerImpl::Reference) return std::make_unique<ReferenceOptimizer>(h, groups);
  return std::make_unique<MultiTensorOptimizer>(h, groups, impl == OptimizerImpl::Fused);
}

}  // namespace xpuperf::optim
