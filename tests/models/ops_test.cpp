// xpuperf's operators through PyTorch's dispatcher (src/xpuperf/ops/operators.h): every one is
// registered with its composite form, and a kernel a vendor registers for its device's key is
// taken as the contract says (docs/VENDORS.md): a forward kernel where autograd does not record,
// the composite operator where it does, and a kernel registered for the autograd key too in both.
// The tests register kernels for the CPU's keys for their own duration (torch::Library undoes its
// registrations when it goes).

#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <atomic>
#include <memory>
#include <string>

#include "xpuperf/models/fused_ops.h"
#include "xpuperf/ops/composite.h"
#include "xpuperf/ops/operators.h"

namespace xpuperf::ops {
namespace {

std::atomic<int> g_kernel_calls{0};

// A "vendor's" add_rms_norm for the CPU: the composite operator's values times 2, so that a test
// sees which ran, and a count of its calls.
std::tuple<torch::Tensor, torch::Tensor> doubling_add_rms_norm(const torch::Tensor& x,
                                                               const c10::optional<torch::Tensor>& delta,
                                                               const torch::Tensor& weight, double eps,
                                                               c10::optional<torch::ScalarType> out_type) {
  ++g_kernel_calls;
  const at::AutoDispatchBelowAutograd composite_below;  // the composite's ATen operators, not this kernel again
  auto [sum, out] =
      composite::add_rms_norm(x, delta.has_value() ? *delta : torch::Tensor(), weight, eps,
                              out_type.has_value() ? std::optional<torch::ScalarType>(*out_type) : std::nullopt);
  return {sum, out * 2};
}

std::unique_ptr<torch::Library> register_for(c10::DispatchKey key) {
  auto library = std::make_unique<torch::Library>(torch::Library::IMPL, "xpuperf", key, __FILE__, __LINE__);
  library->impl("add_rms_norm", &doubling_add_rms_norm);
  return library;
}

TEST(Operators, EveryOperatorIsRegisteredWithItsCompositeFormAndNoKernelOnTheCpu) {
  ASSERT_EQ(operator_names().size(), 17u);
  for (const auto name : operator_names()) {
    const std::string text(name);
    const auto dot = text.find('.');
    const auto handle = c10::Dispatcher::singleton().findSchema(
        {"xpuperf::" + text.substr(0, dot), dot == std::string::npos ? "" : text.substr(dot + 1)});
    ASSERT_TRUE(handle.has_value()) << text;
    EXPECT_TRUE(handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd)) << text;
    EXPECT_FALSE(has_kernel(name, c10::DeviceType::CPU)) << text;
  }
  EXPECT_FALSE(device_has_kernels(c10::DeviceType::CPU));
  EXPECT_FALSE(has_kernel("no_such_operator", c10::DeviceType::CPU));
}

TEST(Operators, ThroughTheDispatcherTheCpuGivesTheCompositeValuesAndGradients) {
  torch::manual_seed(3);
  const auto x = torch::randn({6, 32}, torch::requires_grad()), delta = torch::randn({6, 32});
  const auto weight = torch::rand({32}) + 0.5;
  const auto [sum, out] = add_rms_norm(x, delta, weight, 1e-6);
  const auto [want_sum, want_out] = composite::add_rms_norm(x, delta, weight, 1e-6);
  EXPECT_TRUE(out.equal(want_out));
  EXPECT_TRUE(sum.equal(want_sum));
  const auto grad = torch::autograd::grad({out.sum()}, {x})[0];
  const auto want_grad = torch::autograd::grad({want_out.sum()}, {x})[0];
  EXPECT_TRUE(grad.equal(want_grad));
  const auto gate_up = torch::randn({4, 16});
  EXPECT_TRUE(silu_mul(gate_up).equal(composite::silu_mul(gate_up)));
  EXPECT_TRUE(ops::argmax(gate_up).equal(composite::argmax(gate_up)));
  const auto images = torch::randn({2, 8, 7, 7});
  EXPECT_TRUE(max_pool2d(images, 3, 2, 1).equal(composite::max_pool2d(images, 3, 2, 1)));
}

TEST(Operators, AForwardKernelRunsWhereAutogradDoesNotRecordAndTheCompositeFormWhereItDoes) {
  const auto library = register_for(c10::DispatchKey::CPU);
  EXPECT_TRUE(has_kernel("add_rms_norm", c10::DeviceType::CPU));
  EXPECT_FALSE(has_kernel("add_rms_norm", c10::DeviceType::CPU, /*training=*/true));
  EXPECT_TRUE(device_has_kernels(c10::DeviceType::CPU));
  const auto x = torch::randn({4, 16}), weight = torch::ones({16});
  const auto composite_out = std::get<1>(composite::add_rms_norm(x, {}, weight, 1e-6));

  g_kernel_calls = 0;
  {
    const torch::NoGradGuard no_grad;
    EXPECT_TRUE(std::get<1>(add_rms_norm(x, {}, weight, 1e-6)).equal(composite_out * 2));
  }
  // Grad mode on but nothing requires a gradient: autograd records nothing, the kernel runs.
  EXPECT_TRUE(std::get<1>(add_rms_norm(x, {}, weight, 1e-6)).equal(composite_out * 2));
  EXPECT_EQ(g_kernel_calls.load(), 2);

  // Recording: the composite form, with its gradient, and the kernel not called.
  const auto leaf = x.clone().requires_grad_(true);
  const auto out = std::get<1>(add_rms_norm(leaf, {}, weight, 1e-6));
  EXPECT_TRUE(out.equal(composite_out));
  ASSERT_TRUE(out.requires_grad());
  out.sum().backward();
  EXPECT_TRUE(leaf.grad().defined());
  EXPECT_EQ(g_kernel_calls.load(), 2);

  // The models' front: fused_kernels true takes the kernel, false the composite form.
  {
    const torch::NoGradGuard no_grad;
    EXPECT_TRUE(models::fused::add_rms_norm(x, {}, weight, 1e-6, true).second.equal(composite_out * 2));
    EXPECT_TRUE(models::fused::add_rms_norm(x, {}, weight, 1e-6, false).second.equal(composite_out));
  }
}

TEST(Operators, AKernelRegisteredForTheAutogradKeyTooRunsInTraining) {
  const auto forward = register_for(c10::DispatchKey::CPU);
  const auto training = register_for(c10::DispatchKey::AutogradCPU);
  EXPECT_TRUE(has_kernel("add_rms_norm", c10::DeviceType::CPU, /*training=*/true));
  g_kernel_calls = 0;
  const auto leaf = torch::randn({4, 16}, torch::requires_grad());
  const auto weight = torch::ones({16});
  const auto out = std::get<1>(add_rms_norm(leaf, {}, weight, 1e-6));
  EXPECT_EQ(g_kernel_calls.load(), 1);
  EXPECT_TRUE(out.equal(std::get<1>(composite::add_rms_norm(leaf, {}, weight, 1e-6)) * 2));
}

TEST(Operators, WithoutTheRegistrationsTheCompositeFormIsBack) {
  { const auto library = register_for(c10::DispatchKey::CPU); }
  EXPECT_FALSE(has_kernel("add_rms_norm", c10::DeviceType::CPU));
  const torch::NoGradGuard no_grad;
  const auto x = torch::randn({4, 16}), weight = torch::ones({16});
  EXPECT_TRUE(
      std::get<1>(add_rms_norm(x, {}, weight, 1e-6)).equal(std::get<1>(composite::add_rms_norm(x, {}, weight, 1e-6))));
}

TEST(Operators, KernelListsAreCommaSeparatedNames) {
  EXPECT_TRUE(kernel_listed("decode_attention", "decode_attention"));
  EXPECT_TRUE(kernel_listed("gemv, decode_attention ", "decode_attention"));
  EXPECT_FALSE(kernel_listed("gemv_silu_mul", "gemv"));
  EXPECT_FALSE(kernel_listed("", "gemv"));
}

}  // namespace
}  // namespace xpuperf::ops
