// The convolutional networks' batch norm with its activation and residual add (batch_norm_act.h):
// on the CPU the module's own forward, and ResNet-50's and MobileNetV2's training paths with the
// switch on give exactly what they give without it; on a GPU the kernels give ATen's outputs,
// gradients and running statistics in every type, and the two networks train on them as on ATen.
// The same for ResNet's stem max pool (max_pool.h).

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>
#include <string>
#include <vector>

#include "parameter_count.h"
#include "xpuperf/models/batch_norm_act.h"
#include "xpuperf/models/fused_ops.h"
#include "xpuperf/models/max_pool.h"
#include "xpuperf/models/mobilenet_v2.h"
#include "xpuperf/models/resnet50.h"
#include "xpuperf/torchrt/compat.h"

namespace xpuperf::models {
namespace {

using fused::Activation;

const char* name(Activation act) {
  return act == Activation::Relu ? "relu" : act == Activation::Relu6 ? "relu6" : "none";
}

// The largest difference as a share of the largest expected value: the kernels round where ATen's
// kernels do, but add the statistics in another order.
void expect_near_all(const torch::Tensor& got, const torch::Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined() && want.defined()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_EQ(got.scalar_type(), want.scalar_type()) << what;
  const double tolerance = got.scalar_type() == torch::kFloat  ? 2e-5
                           : got.scalar_type() == torch::kHalf ? 2e-3
                                                               : 1.6e-2;
  const auto g = got.to(torch::kDouble), w = want.to(torch::kDouble);
  const double scale = w.abs().max().item<double>() + 1e-30;
  const double diff = (g - w).abs().max().item<double>();
  EXPECT_LE(diff / scale, tolerance) << what << ": largest difference " << diff << " of values up to " << scale;
}

struct BatchNormRun {
  torch::Tensor y, x_grad, weight_grad, bias_grad, residual_grad, running_mean, running_var, batches;
};

// One forward and backward of batch_norm_act on copies of the inputs and of `bn`, the loss a random
// weighting of the output.
BatchNormRun run_batch_norm(const torch::Tensor& x0, const torch::Tensor& residual0, torch::nn::BatchNorm2d bn0,
                            const torch::Tensor& r, Activation act, bool kernels) {
  auto bn = std::dynamic_pointer_cast<torch::nn::BatchNorm2dImpl>(bn0->clone());
  bn->train();
  auto x = x0.clone().requires_grad_(true);
  auto residual = residual0.defined() ? residual0.clone().requires_grad_(true) : torch::Tensor();
  const auto y = fused::batch_norm_act(x, *bn, residual, act, kernels);
  (y.to(torch::kFloat) * r).sum().backward();
  return {y,
          x.grad(),
          bn->weight.grad(),
          bn->bias.grad(),
          residual.defined() ? residual.grad() : torch::Tensor(),
          bn->running_mean.clone(),
          bn->running_var.clone(),
          bn->num_batches_tracked.clone()};
}

torch::nn::BatchNorm2d random_batch_norm(std::int64_t channels, const torch::Device& device) {
  torch::nn::BatchNorm2d bn(channels);
  torch::NoGradGuard no_grad;
  bn->weight.uniform_(0.5, 1.5);
  bn->bias.uniform_(-0.5, 0.5);
  bn->running_mean.uniform_(-1, 1);
  bn->running_var.uniform_(0.5, 2);
  bn->to(device);
  return bn;
}

TEST(BatchNormAct, OnTheCpuIsTheModulesForwardWithTheAddAndTheActivation) {
  torch::manual_seed(3);
  const auto x = torch::randn({4, 8, 5, 3}) * 2 + 0.5, residual = torch::randn({4, 8, 5, 3});
  const auto r = torch::randn({4, 8, 5, 3});
  for (const auto act : {Activation::None, Activation::Relu, Activation::Relu6}) {
    for (const bool with_residual : {true, false}) {
      const auto bn = random_batch_norm(8, torch::kCPU);
      const auto got = run_batch_norm(x, with_residual ? residual : torch::Tensor(), bn, r, act, true);
      // By hand: the module's forward, the add, the activation.
      auto mine = std::dynamic_pointer_cast<torch::nn::BatchNorm2dImpl>(bn->clone());
      auto xx = x.clone().requires_grad_(true);
      auto y = mine->forward(xx);
      if (with_residual) y = y + residual;
      y = act == Activation::Relu ? torch::relu(y) : act == Activation::Relu6 ? torch::clamp(y, 0, 6) : y;
      (y * r).sum().backward();
      const std::string what = std::string(name(act)) + (with_residual ? " with residual" : "");
      EXPECT_TRUE(torch::equal(got.y, y)) << what;
      EXPECT_TRUE(torch::equal(got.x_grad, xx.grad())) << what;
      EXPECT_TRUE(torch::equal(got.weight_grad, mine->weight.grad())) << what;
      EXPECT_TRUE(torch::equal(got.running_var, mine->running_var)) << what;
      EXPECT_EQ(got.batches.item<std::int64_t>(), 1) << what;
    }
  }
  // In evaluation: the running statistics, untouched.
  auto bn = random_batch_norm(8, torch::kCPU);
  bn->eval();
  const auto before = bn->running_mean.clone();
  const auto y = fused::batch_norm_act(x, *bn, {}, Activation::Relu, true);
  EXPECT_TRUE(torch::allclose(
      y,
      torch::relu((x - before.view({1, 8, 1, 1})) / torch::sqrt(bn->running_var.view({1, 8, 1, 1}) + 1e-5) *
                      bn->weight.view({1, 8, 1, 1}) +
                  bn->bias.view({1, 8, 1, 1})),
      1e-5, 1e-5));
  EXPECT_TRUE(torch::equal(bn->running_mean, before));
}

// The networks' switch takes another path through the blocks (the batch norms called one by one,
// the residual handed to the last); where the kernels do not run (here: the CPU) that path computes
// exactly what the modules' own forward does.
template <typename Net>
void expect_the_switch_changes_nothing_on_the_cpu(const char* what) {
  torch::manual_seed(5);
  Net plain(10), switched(10);
  copy_parameters(*plain, *switched);
  switched->use_fused_kernels(true);
  plain->train();
  switched->train();
  const auto images = torch::randn({2, 3, 64, 64});
  torch::manual_seed(6);  // the same dropout
  const auto a = plain->forward(images);
  torch::manual_seed(6);
  const auto b = switched->forward(images);
  EXPECT_TRUE(torch::equal(a, b)) << what;
  a.sum().backward();
  b.sum().backward();
  const auto pa = plain->parameters(), pb = switched->parameters();
  for (std::size_t i = 0; i < pa.size(); ++i)
    ASSERT_TRUE(torch::equal(pa[i].grad(), pb[i].grad())) << what << ": parameter " << i;
  const auto ba = plain->buffers(), bb = switched->buffers();
  for (std::size_t i = 0; i < ba.size(); ++i)
    ASSERT_TRUE(torch::equal(ba[i], bb[i])) << what << ": buffer " << i << " (running statistics)";
}

TEST(BatchNormAct, ResNet50AndMobileNetV2ComputeTheSameWithTheSwitchOnTheCpu) {
  expect_the_switch_changes_nothing_on_the_cpu<ResNet50>("resnet50");
  expect_the_switch_changes_nothing_on_the_cpu<MobileNetV2>("mobilenetv2");
}

bool no_cuda_kernels() {
  return !torch::cuda::is_available() || !fused::kernels_built();
}

// The parameters' gradients in double from the same inputs: Σ g and Σ g x̂ with g the loss's gradient
// in the element type through the activation's mask (taken from `y`), x̂ from the batch's statistics.
std::pair<torch::Tensor, torch::Tensor> exact_parameter_gradients(const torch::Tensor& x, const torch::Tensor& y,
                                                                  const torch::Tensor& r, Activation act) {
  const std::vector<std::int64_t> dims = {0, 2, 3};
  const auto xd = x.to(torch::kDouble);
  const auto mean = xd.mean(dims, true);
  const auto xhat = (xd - mean) / torch::sqrt((xd - mean).pow(2).mean(dims, true) + 1e-5);
  const auto yf = y.to(torch::kFloat);
  const auto mask = act == Activation::None   ? torch::ones_like(yf)
                    : act == Activation::Relu ? (yf > 0).to(torch::kFloat)
                                              : ((yf > 0) & (yf < 6)).to(torch::kFloat);
  const auto g = r.to(x.scalar_type()).to(torch::kDouble) * mask.to(torch::kDouble);
  return {(g * xhat).sum(dims), g.sum(dims)};
}

double share_off(const torch::Tensor& got, const torch::Tensor& exact) {
  return (got.to(torch::kDouble) - exact).abs().max().item<double>() / (exact.abs().max().item<double>() + 1e-30);
}

// The kernels against ATen's batch norm, add and activation: values, every gradient, the running
// statistics, in every type; channels of whole packs (64, 24, 320, 2048), 12 (whole for float only:
// ATen's path for the half types) and 3 (ATen's path); a large layer, whose statistics many blocks
// share. The parameters' gradients (float sums over the batch) also against the sums in double: the
// kernels' as near as ATen's, or within 1e-4.
TEST(BatchNormAct, TheKernelsGiveAtensValuesGradientsAndRunningStatistics) {
  if (no_cuda_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  torch::manual_seed(9);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  struct Shape {
    std::int64_t n, c, h, w;
  };
  const std::vector<Shape> shapes = {{4, 64, 5, 7}, {4, 24, 5, 7}, {2, 320, 3, 3},  {4, 2048, 7, 7},
                                     {4, 12, 5, 7}, {4, 3, 5, 7},  {16, 64, 56, 56}};
  const auto channels_last = torch::MemoryFormat::ChannelsLast;
  for (const auto dtype : {torch::kFloat, torch::kBFloat16, torch::kHalf}) {
    for (const auto& s : shapes) {
      const auto x = (torch::randn({s.n, s.c, s.h, s.w}, cuda) * 2 + 0.5).to(dtype).contiguous(channels_last);
      const auto residual = torch::randn({s.n, s.c, s.h, s.w}, cuda).to(dtype).contiguous(channels_last);
      // The loss's weights in the activations' layout, as a convolution's gradient arrives.
      const auto r = torch::randn({s.n, s.c, s.h, s.w}, cuda).contiguous(channels_last);
      const auto bn = random_batch_norm(s.c, torch::kCUDA);
      for (const auto act : {Activation::None, Activation::Relu, Activation::Relu6}) {
        for (const bool with_residual : {true, false}) {
          const auto res = with_residual ? residual : torch::Tensor();
          const auto got = run_batch_norm(x, res, bn, r, act, true);
          const auto want = run_batch_norm(x, res, bn, r, act, false);
          const std::string what = std::string(c10::toString(dtype)) + " " + std::to_string(s.n) + "x" +
                                   std::to_string(s.c) + "x" + std::to_string(s.h) + "x" + std::to_string(s.w) + " " +
                                   name(act) + (with_residual ? " with residual" : "");
          expect_near_all(got.y, want.y, what + ": output");
          EXPECT_TRUE(got.y.is_contiguous(channels_last)) << what;
          expect_near_all(got.x_grad, want.x_grad, what + ": x's gradient");
          if (with_residual) expect_near_all(got.residual_grad, want.residual_grad, what + ": residual's gradient");
          expect_near_all(got.running_mean, want.running_mean, what + ": running mean");
          expect_near_all(got.running_var, want.running_var, what + ": running variance");
          EXPECT_EQ(got.batches.item<std::int64_t>(), want.batches.item<std::int64_t>()) << what;
          const auto [weight_exact, bias_exact] = exact_parameter_gradients(x, got.y, r, act);
          const double ours_w = share_off(got.weight_grad, weight_exact),
                       atens_w = share_off(want.weight_grad, weight_exact);
          const double ours_b = share_off(got.bias_grad, bias_exact), atens_b = share_off(want.bias_grad, bias_exact);
          EXPECT_LE(ours_w, std::max(atens_w, 1e-4)) << what << ": weight's gradient; ATen's is off by " << atens_w;
          EXPECT_LE(ours_b, std::max(atens_b, 1e-4)) << what << ": bias's gradient; ATen's is off by " << atens_b;
          if (dtype == torch::kFloat) {
            expect_near_all(got.weight_grad, want.weight_grad, what + ": weight's gradient");
            expect_near_all(got.bias_grad, want.bias_grad, what + ": bias's gradient");
          }
        }
      }
    }
  }
}

// One training step of each network, channels-last under bf16 autocast, with the kernels and
// without, judged against the same step in fp32 (ATen's operators): the kernels' loss and gradients
// are as near to it as ATen's bf16 ones.
template <typename Net>
void expect_the_same_step_on_the_gpu(const char* what) {
  torch::manual_seed(13);
  std::vector<Net> nets = {Net(10), Net(10), Net(10)};  // bf16 on ATen, bf16 on the kernels, fp32 on ATen
  for (std::size_t n = 1; n < nets.size(); ++n) copy_parameters(*nets[0], *nets[n]);
  nets[1]->use_fused_kernels(true);
  std::vector<double> losses;
  std::vector<torch::Tensor> grads;
  const auto images = torch::randn({8, 3, 64, 64}, torch::kCUDA).contiguous(torch::MemoryFormat::ChannelsLast);
  const auto labels = torch::randint(0, 10, {8}, torch::TensorOptions().device(torch::kCUDA).dtype(torch::kLong));
  for (std::size_t n = 0; n < nets.size(); ++n) {
    auto& net = nets[n];
    net->to(torch::kCUDA);
    for (auto& p : net->parameters())
      if (p.dim() == 4) p.set_data(p.contiguous(torch::MemoryFormat::ChannelsLast));  // as channels_last does
    net->train();
    torch::manual_seed(14);  // the same dropout
    const bool bf16 = n < 2;
    compat::set_autocast_enabled(torch::kCUDA, bf16);
    compat::set_autocast_dtype(torch::kCUDA, torch::kBFloat16);
    const auto loss = torch::cross_entropy_loss(net->forward(images).to(torch::kFloat), labels);
    compat::set_autocast_enabled(torch::kCUDA, false);
    at::autocast::clear_cache();
    loss.backward();
    losses.push_back(loss.template item<double>());
    std::vector<torch::Tensor> g;
    for (const auto& p : net->parameters()) g.push_back(p.grad().flatten().to(torch::kDouble));
    grads.push_back(torch::cat(g));
  }
  const double norm = grads[2].norm().item<double>();
  const double atens_off = (grads[0] - grads[2]).norm().item<double>() / norm;
  const double ours_off = (grads[1] - grads[2]).norm().item<double>() / norm;
  std::cout << what << ": loss " << losses[0] << " (ATen bf16) " << losses[1] << " (kernels bf16) " << losses[2]
            << " (fp32); gradient norm " << grads[0].norm().item<double>() << " " << grads[1].norm().item<double>()
            << " " << norm << "; bf16 gradients off fp32's by " << atens_off << " (ATen) " << ours_off
            << " (kernels)\n";
  // bf16 moves this small batch's loss by percents (its batch norms see a few values a channel).
  EXPECT_LE(std::abs(losses[1] - losses[2]), std::max(1.25 * std::abs(losses[0] - losses[2]), 2e-3 * losses[2]))
      << what << ": the loss";
  EXPECT_LE(ours_off, std::max(1.25 * atens_off, 1e-2)) << what << ": the gradients";
}

// The max pool kernels against ATen's max_pool2d: values and gradients, ties included (small integers:
// the first position of the window wins on both sides), ResNet's stem window and others, odd sizes,
// every type; NCHW input and channels no whole pack take ATen's path.
TEST(MaxPool, TheKernelsGiveAtensValuesAndGradients) {
  if (no_cuda_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  torch::manual_seed(17);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  struct Case {
    std::int64_t n, c, h, w, kernel, stride, padding;
  };
  const std::vector<Case> cases = {{2, 64, 112, 112, 3, 2, 1}, {3, 16, 7, 9, 3, 2, 1}, {2, 8, 8, 6, 2, 2, 0},
                                   {2, 24, 5, 5, 3, 1, 1},     {2, 12, 9, 9, 3, 2, 1}, {2, 3, 9, 9, 3, 2, 1}};
  for (const auto dtype : {torch::kFloat, torch::kBFloat16, torch::kHalf}) {
    for (const auto& c : cases) {
      for (const bool channels_last : {true, false}) {
        auto x0 = torch::randint(-4, 5, {c.n, c.c, c.h, c.w}, cuda).to(dtype);
        if (channels_last) x0 = x0.contiguous(torch::MemoryFormat::ChannelsLast);
        const auto o = (c.h + 2 * c.padding - c.kernel) / c.stride + 1,
                   ow = (c.w + 2 * c.padding - c.kernel) / c.stride + 1;
        const auto r = torch::randn({c.n, c.c, o, ow}, cuda);
        std::vector<torch::Tensor> got, want;
        for (const bool kernels : {true, false}) {
          auto x = x0.clone().requires_grad_(true);
          const auto y = fused::max_pool2d(x, c.kernel, c.stride, c.padding, kernels);
          (y.to(torch::kFloat) * r).sum().backward();
          auto& into = kernels ? got : want;
          into = std::vector<torch::Tensor>{y, x.grad()};
        }
        const std::string what = std::string(c10::toString(dtype)) + " " + std::to_string(c.c) + "x" +
                                 std::to_string(c.h) + "x" + std::to_string(c.w) + " window " +
                                 std::to_string(c.kernel) + "/" + std::to_string(c.stride) + "/" +
                                 std::to_string(c.padding) + (channels_last ? " channels-last" : " NCHW");
        EXPECT_TRUE(torch::equal(got[0], want[0])) << what << ": output";
        expect_near_all(got[1], want[1], what + ": gradient");
      }
    }
  }
}

TEST(BatchNormAct, ResNet50AndMobileNetV2TrainOnTheKernelsAsOnAtensOnTheGpu) {
  if (no_cuda_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  expect_the_same_step_on_the_gpu<ResNet50>("resnet50");
  expect_the_same_step_on_the_gpu<MobileNetV2>("mobilenetv2");
}

}  // namespace
}  // namespace xpuperf::models
