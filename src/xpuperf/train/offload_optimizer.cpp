#include "xpuperf/train/offload_optimizer.h"

#include <ATen/Parallel.h>

#include <cmath>

#include "xpuperf/train/cpu_adam.h"

namespace xpuperf::train {
namespace {

struct Slot {
  torch::Tensor param;                    // on its device, in its (perhaps now bf16) type
  torch::Tensor master, m, v, grad_host;  // host, fp32, flat
  float weight_decay = 0;
};

class OffloadAdam : public StepOptimizer {
 public:
  OffloadAdam(const AdamHyper& h, double weight_decay, const std::vector<torch::Tensor>& with_decay,
              const std::vector<torch::Tensor>& without_decay, bool device_bf16)
      : h_(h), lr_(h.lr) {
    const torch::NoGradGuard no_grad;
    auto add = [&](const torch::Tensor& p, double wd) {
      const bool pinned = p.is_cuda();
      const auto host = [&] {
        return torch::zeros({p.numel()}, torch::TensorOptions().dtype(torch::kFloat).pinned_memory(pinned));
      };
      Slot s{p, host(), host(), host(), host(), static_cast<float>(wd)};
      s.master.copy_(p.detach().reshape({-1}));
      if (device_bf16 && p.is_floating_point() && p.scalar_type() != torch::kBFloat16)
        s.param.set_data(p.to(torch::kBFloat16));
      slots_.push_back(std::move(s));
    };
    for (const auto& p : with_decay) add(p, weight_decay);
    for (const auto& p : without_decay) add(p, 0.0);
  }

  void set_lr(double lr) override { lr_ = lr; }
  void zero_grad() override {
    for (auto& s : slots_)
      if (s.param.grad().defined()) s.param.mutable_grad().zero_();
  }

  void step() override {
    const torch::NoGradGuard no_grad;
    ++step_;
    const double correction1 = 1.0 - std::pow(h_.beta1, static_cast<double>(step_));
    const double correction2 = 1.0 - std::pow(h_.beta2, static_cast<double>(step_));
    for (auto& s : slots_) {
      TORCH_CHECK(s.param.grad().defined(), "a parameter has no gradient: every parameter must take part in the loss");
      s.grad_host.copy_(s.param.grad().reshape({-1}));  // to the host, in fp32
    }
    for (auto& s : slots_) {
      const CpuAdamCoefficients c{h_.decoupled,
                                  static_cast<float>(1.0 - lr_ * s.weight_decay),
                                  s.weight_decay,
                                  static_cast<float>(h_.beta1),
                                  static_cast<float>(1.0 - h_.beta1),
                                  static_cast<float>(h_.beta2),
                                  static_cast<float>(1.0 - h_.beta2),
                                  static_cast<float>(std::sqrt(correction2)),
                                  static_cast<float>(h_.eps),
                                  static_cast<float>(-lr_ / correction1)};
      float* p = s.master.data_ptr<float>();
      float* m = s.m.data_ptr<float>();
      float* v = s.v.data_ptr<float>();
      const float* g = s.grad_host.data_ptr<float>();
      at::parallel_for(0, s.master.numel(), 1 << 15,
                       [&](std::int64_t begin, std::int64_t end) { cpu_adam(p, m, v, g, begin, end, c); });
    }
    for (auto& s : slots_) s.param.copy_(s.master.view(s.param.sizes()));  // back, in the parameter's type
  }

 private:
  AdamHyper h_;
  double lr_;
  std::int64_t step_ = 0;
  std::vector<Slot> slots_;
};

}  // namespace

std::unique_ptr<StepOptimizer> make_offload_adam(const AdamHyper& h, double weight_decay,
                                                 std::vector<torch::Tensor> with_decay,
                                                 std::vector<torch::Tensor> without_decay, bool device_bf16) {
  return std::make_unique<OffloadAdam>(h, weight_decay, with_decay, without_decay, device_bf16);
}

}  // namespace xpuperf::train
