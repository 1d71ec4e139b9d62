// The runtime's acceleration switches keep the loss: each one on gives the loss curve of the
// run without it over the first steps (exactly for the optimizer step implementations, within
// bf16's precision for autocast). Also the data interface the vision cases use.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <sstream>
#include <tuple>

#include "test_util.h"
#include "toy_case.h"
#include "xpuperf/datasets/image_dataset.h"
#include "xpuperf/optim/cpu_adam.h"
#include "xpuperf/optim/offload_optimizer.h"
#include "xpuperf/optim/optimizers.h"
#include "xpuperf/torchrt/host_arena.h"
#include "xpuperf/train/families/image_classification.h"
#include "xpuperf/train/lr_schedule.h"
#include "xpuperf/train/runtime.h"

namespace xpuperf::train {
// The tests drive the layers below the runtime directly.
using namespace xpuperf::torchrt;
namespace {

// A small convolutional classifier with batch norm, biases and a classifier, as the vision
// cases' models have, trained through the image classification case on synthetic images.
struct TinyConvNetImpl : torch::nn::Module {
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Linear fc{nullptr};
  explicit TinyConvNetImpl(std::int64_t classes) {
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1).bias(false)));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(8));
    conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 16, 3).stride(2).padding(1)));
    bn2 = register_module("bn2", torch::nn::BatchNorm2d(16));
    fc = register_module("fc", torch::nn::Linear(16, classes));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(bn1(conv1(x)));
    y = torch::relu(bn2(conv2(y)));
    return fc(torch::adaptive_avg_pool2d(y, {1, 1}).flatten(1));
  }
};
TORCH_MODULE(TinyConvNet);

class TinyVisionCase : public ImageClassificationCase {
  Model build(const Config&, std::int64_t classes, std::int64_t) override {
    auto net = TinyConvNet(classes);
    return {net.ptr(), [net](const torch::Tensor& x) mutable { return net->forward(x); }, 1.0};
  }
};

std::vector<PerfLogEvent> run_events(const std::string& overrides, int steps) {
  TinyVisionCase c;
  const std::string config =
      "synthetic_data: true\nsynthetic_train_samples: 96\nsynthetic_eval_samples: 16\nimage_size: 16\nnum_classes: "
      "4\nlabel_smoothing: 0.1\nmax_epochs: 0\nmax_steps: " +
      std::to_string(steps) +
      "\nlog_freq: 1\ntrain_batch_size: 16\neval_batch_size: "
      "16\nmomentum: 0.9\nweight_decay: 0.01\nweight_decay_skip_1d: true\nlr: 0.05\n" +
      overrides;
  std::ostringstream out;
  RunInfo info;
  info.case_name = "tiny:libtorch";
  info.vendor = "cpu";
  run_training(c, test::toy_config_for(config), info, out);
  std::istringstream in(out.str());
  return parse_perflog(in).events;
}

std::vector<double> losses(const std::string& overrides, int steps = 6) {
  std::vector<double> l;
  for (const auto& e : run_events(overrides, steps))
    if (e.event == "STEP_END") l.push_back(e.value["loss"].get<double>());
  return l;
}

void expect_close(const std::vector<double>& a, const std::vector<double>& b, double relative) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GE(a.size(), 6u);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], relative * std::abs(a[i])) << "step " << i + 1;
}

TEST(Switches, ForeachOptimizerStepGivesTheReferenceLoss) {
  for (const char* optimizer : {"sgd", "adam", "adamw"}) {
    SCOPED_TRACE(optimizer);
    const std::string o = std::string("optimizer: ") + optimizer + "\n" + (optimizer[0] == 'a' ? "lr: 0.01\n" : "");
    const auto reference = losses(o + "fused_optimizer: off\n");
    expect_close(losses(o + "fused_optimizer: foreach\n"), reference, 1e-5);
    EXPECT_LT(reference.back(), reference.front()) << "the loss falls, so the test can tell steps apart";
  }
}

// The multi-tensor step leaves the gradients none, as torch.optim's zero_grad does, and a parameter
// that had a gradient in the first step and has none later steps on zeros, as it did on a zeroed one.
TEST(Switches, TheMultiTensorStepLeavesGradientsNoneAndStepsAMissingOneOnZeros) {
  torch::manual_seed(3);
  auto a = torch::randn({5}).requires_grad_(), b = torch::randn({4}).requires_grad_();
  auto ra = a.detach().clone().requires_grad_(), rb = b.detach().clone().requires_grad_();
  torch::optim::AdamW reference({ra, rb}, torch::optim::AdamWOptions(0.01).weight_decay(0.1));
  const auto cfg = test::toy_config_for("optimizer: adamw\nlr: 0.01\nweight_decay: 0.1\n");
  auto ours = optim::make_optimizer(optim::read_optimizer_settings(cfg), {a, b}, {}, optim::OptimizerImpl::Foreach);
  for (int step = 0; step < 3; ++step) {
    ours->zero_grad();
    for (auto* p : {&ra, &rb})
      if (p->grad().defined()) p->mutable_grad().zero_();
    EXPECT_FALSE(a.grad().defined()) << "step " << step;
    const auto ga = torch::randn({5});
    a.mutable_grad() = ga.clone(), ra.mutable_grad() = ga.clone();
    if (step == 0) {  // b takes part in the first step only
      const auto gb = torch::randn({4});
      b.mutable_grad() = gb.clone(), rb.mutable_grad() = gb.clone();
    }
    ours->step();
    reference.step();
    EXPECT_TRUE(torch::allclose(a.detach(), ra.detach(), 1e-6, 1e-7)) << "step " << step;
    EXPECT_TRUE(torch::allclose(b.detach(), rb.detach(), 1e-6, 1e-7)) << "step " << step;
  }
  // A parameter without a gradient in the first step is an error, as before.
  auto c = torch::randn({3}).requires_grad_();
  auto fresh = optim::make_optimizer(optim::read_optimizer_settings(cfg), {c}, {}, optim::OptimizerImpl::Foreach);
  EXPECT_THROW(fresh->step(), c10::Error);
}

// Clipping inside the fused Adam step (its kernels' grad_scale) gives optim::clip_gradients-then-step's
// weights; the other implementations leave it to the caller.
TEST(Switches, TheFusedAdamClipsInsideItsStepAsClipGradientsDoes) {
  const auto cfg = test::toy_config_for("optimizer: adamw\nlr: 0.01\nweight_decay: 0.1\n");
  auto cpu = torch::randn({8}).requires_grad_();
  EXPECT_FALSE(optim::make_optimizer(optim::read_optimizer_settings(cfg), {cpu}, {}, optim::OptimizerImpl::Foreach)
                   ->clip_in_step(torch::ones({}), 1.0));
  if (!torch::cuda::is_available()) GTEST_SKIP() << "the fused kernels: no CUDA device (run on the GPU machine)";
  torch::manual_seed(5);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  auto a = torch::randn({1000}, cuda).requires_grad_(), b = a.detach().clone().requires_grad_();
  auto clipped_first = optim::make_optimizer(optim::read_optimizer_settings(cfg), {a}, {}, optim::OptimizerImpl::Fused);
  auto clipped_inside =
      optim::make_optimizer(optim::read_optimizer_settings(cfg), {b}, {}, optim::OptimizerImpl::Fused);
  for (int step = 0; step < 4; ++step) {
    const auto grad = torch::randn({1000}, cuda) * (step == 1 ? 1e-3 : 10.0);  // one step under the limit
    a.mutable_grad() = grad.clone(), b.mutable_grad() = grad.clone();
    optim::clip_gradients({a}, optim::gradient_norm({a}), 1.0);
    clipped_first->step();
    ASSERT_TRUE(clipped_inside->clip_in_step(optim::gradient_norm({b}), 1.0));
    clipped_inside->step();
    EXPECT_TRUE(torch::allclose(a.detach(), b.detach(), 1e-6, 1e-7)) << "step " << step;
    clipped_first->zero_grad(), clipped_inside->zero_grad();
  }
}

// The offloaded state's host memory: tensors of any type carved from one block at 64-byte
// boundaries, zero without a fill, apart from each other, alive after the arena object is gone,
// and a full arena an error, not an overrun. On a GPU machine the block is page-locked at its exact
// size, and the device copies to and from it asynchronously.
TEST(Switches, TheHostArenaHandsOutZeroAlignedTensorsThatOutliveIt) {
  torch::Tensor a, b;
  {
    HostArena arena(HostArena::rounded(4 * 1000) + HostArena::rounded(2 * 77), std::nullopt, 2);
    a = arena.take(1000, torch::kFloat);
    b = arena.take(77, torch::kBFloat16);
    EXPECT_THROW(arena.take(1, torch::kFloat), std::length_error);
    EXPECT_FALSE(arena.pinned_exactly());
  }
  EXPECT_EQ(a.numel(), 1000);
  EXPECT_EQ(b.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(a.eq(0).all().item<bool>());
  EXPECT_TRUE(b.eq(0).all().item<bool>());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data_ptr()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data_ptr()) % 64, 0u);
  // More than the host has is an error naming both sizes, not a mapping the OOM killer ends.
  try {
    HostArena too_large(std::int64_t{1} << 60, std::nullopt, 1);
    ADD_FAILURE() << "an arena of 1 EiB was made";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("available"), std::string::npos) << e.what();
  }
  a.fill_(1.5);
  b.fill_(-2.0);
  EXPECT_TRUE(a.eq(1.5).all().item<bool>()) << "b's writes reached a";
  EXPECT_TRUE(b.eq(-2.0).all().item<bool>());
  if (!torch::cuda::is_available()) GTEST_SKIP() << "page-locking: no CUDA device (run on the GPU machine)";
  HostArena pinned(HostArena::rounded(4 * 4096), torch::kCUDA, 2);
  EXPECT_TRUE(pinned.pinned_exactly()) << "NVIDIA's host pinning not registered, or it failed: PyTorch's allocator "
                                          "served it";
  auto host = pinned.take(4096, torch::kFloat);
  const auto device = torch::arange(4096, torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat));
  host.copy_(device, /*non_blocking=*/true);
  torch::cuda::synchronize();
  EXPECT_TRUE(host.equal(device.cpu()));
}

// ZeRO-Offload's host Adam (offload_optimizer.h) is torch::optim's update: 20 steps, 1e-5.
TEST(Switches, TheOffloadedOptimizerGivesTheReferenceLoss) {
  for (const char* optimizer : {"adam", "adamw"}) {
    SCOPED_TRACE(optimizer);
    const std::string o = std::string("optimizer: ") + optimizer + "\nlr: 0.01\n";
    const auto reference = losses(o + "offload_optimizer: false\n", 20);
    expect_close(losses(o + "offload_optimizer: true\n", 20), reference, 1e-5);
    EXPECT_LT(reference.back(), reference.front());
  }
}

// The gradients stream to the host as the step's last backward makes them (one rank, no overlap):
// with gradient accumulation (.grad holds the first micro-batch's part when the second's arrives)
// and clipping on the host, the loss is still torch::optim's clipped AdamW's, and FINISHED says
// that every gradient streamed; with offload_stream_gradients: false none did, with the same loss.
TEST(Switches, StreamedOffloadGradientsGiveTheReferenceLoss) {
  const std::string o = "optimizer: adamw\nlr: 0.01\nclip_grad_norm: 0.05\nglobal_batch_size: 32\n";
  const auto run = [&](const std::string& more) {
    std::vector<double> l;
    double share = -1, largest_norm = 0;
    for (const auto& e : run_events(o + more, 12)) {
      if (e.event == "STEP_END") {
        l.push_back(e.value["loss"].get<double>());
        largest_norm = std::max(largest_norm, e.value.value("grad_norm", 0.0));
      }
      if (e.event == "FINISHED") share = e.value.value("offload_streamed_gradient_share", -1.0);
    }
    return std::make_tuple(l, share, largest_norm);
  };
  const auto [reference, no_share, norm] = run("offload_optimizer: false\n");
  EXPECT_GT(norm, 0.05) << "the clipping must act for the test to see it";
  EXPECT_EQ(no_share, -1.0) << "FINISHED speaks of offload only with it";
  const auto streamed = run("offload_optimizer: true\n");
  expect_close(std::get<0>(streamed), reference, 1e-5);
  EXPECT_EQ(std::get<1>(streamed), 1.0);
  const auto after = run("offload_optimizer: true\noffload_stream_gradients: false\n");
  expect_close(std::get<0>(after), reference, 1e-5);
  EXPECT_EQ(std::get<1>(after), 0.0);
  EXPECT_EQ(std::get<1>(run("offload_optimizer: true\noffload_overlap: true\n")), 0.0)
      << "the overlapped update still reads the buffer while the next backward runs";
}

// The streamed gradients of a real backward, on the CPU and (where there is one) on a GPU's copy
// stream: two micro-batches, the first only accumulating, then clipping inside the step. The weights
// are those of the gradients copied after the backward, bit for bit, in fp32 and with bf16 weights;
// in fp32 they are clip-then-AdamW's of torch::optim, step after step.
TEST(Switches, OffloadStreamsTheLastBackwardsGradientsAndClipsOnTheHost) {
  std::vector<torch::Device> devices{torch::kCPU};
  if (torch::cuda::is_available()) devices.emplace_back(torch::kCUDA);
  for (const auto& device : devices) {
    for (const bool bf16 : {false, true}) {
      SCOPED_TRACE(device.str() + (bf16 ? ", bf16" : ", fp32"));
      torch::manual_seed(6);
      const auto start = torch::randn({3000});
      auto q = start.clone().requires_grad_();
      auto p = start.to(device, false, true).requires_grad_(), r = start.to(device, false, true).requires_grad_();
      torch::optim::AdamW reference({q}, torch::optim::AdamWOptions(0.05).weight_decay(0.1));
      const optim::AdamHyper h{true, 0.05, 0.9, 0.999, 1e-8};
      auto streamed = optim::make_offload_adam(h, 0.1, {p}, {}, bf16, optim::OffloadOverlap{}, true);
      auto after = optim::make_offload_adam(h, 0.1, {r}, {}, bf16, optim::OffloadOverlap{}, false);
      optim::GradientTap* tap = streamed->gradient_tap();
      ASSERT_NE(tap, nullptr);
      EXPECT_EQ(after->gradient_tap(), nullptr) << "without streaming the step reads .grad";
      tap->from_backward();
      for (int step = 0; step < 4; ++step) {
        streamed->zero_grad(), after->zero_grad(), reference.zero_grad();
        for (const bool last : {false, true}) {
          const auto x = torch::randn({3000}) * (step == 2 ? 1e-4 : 1.0);  // one step under the limit
          tap->begin_backward(last);
          (p * p * x.to(device, p.scalar_type())).sum().backward();
          (r * r * x.to(device, r.scalar_type())).sum().backward();
          (q * q * x).sum().backward();
        }
        ASSERT_TRUE(streamed->clip_in_step(optim::gradient_norm({p}), 1.0));
        ASSERT_TRUE(after->clip_in_step(optim::gradient_norm({r}), 1.0));
        optim::clip_gradients({q}, optim::gradient_norm({q}), 1.0);
        streamed->step(), after->step(), reference.step();
        EXPECT_TRUE(torch::equal(p.detach(), r.detach())) << "step " << step;
        if (!bf16) {
          EXPECT_TRUE(torch::allclose(p.detach().cpu(), q.detach(), 1e-5, 1e-6)) << "step " << step;
        }
      }
      nlohmann::json finished;
      streamed->describe(finished);
      EXPECT_EQ(finished.value("offload_streamed_gradient_share", -1.0), 1.0);
      EXPECT_GE(finished.value("offload_gradient_wait_s", -1.0), 0.0);
      after->describe(finished);
      EXPECT_EQ(finished.value("offload_streamed_gradient_share", -1.0), 0.0);
    }
  }
}

// offload_overlap: the host's update of a step runs beside the next step and reaches the weights at
// the step after (ZeRO-Offload's delayed parameter update), after 10 synchronous steps. Steps 1-11
// see the same weights as without it; step 12 sees the weights of step 10, not 11.
TEST(Switches, OverlappedOffloadIsExactForItsSynchronousStepsThenOneUpdateBehind) {
  const std::string o = "optimizer: adamw\nlr: 0.01\noffload_optimizer: true\n";
  const auto reference = losses(o + "offload_overlap: false\n", 20);
  const auto overlapped = losses(o + "offload_overlap: true\n", 20);
  ASSERT_EQ(overlapped.size(), 20u);
  for (std::size_t i = 0; i < 11; ++i)
    EXPECT_NEAR(overlapped[i], reference[i], 1e-5 * reference[i]) << "step " << i + 1;
  EXPECT_GT(std::abs(overlapped[11] - reference[11]), 1e-4 * reference[11]) << "step 12 uses the weights of step 10";
  EXPECT_LT(overlapped.back(), overlapped.front()) << "it still trains";
}

// The update runs beside the caller until flush() (or the next step) brings it to the weights; it
// is then torch::optim's AdamW's, step for step.
TEST(Switches, AnOverlappedOffloadUpdateReachesTheWeightsAtTheFlush) {
  torch::manual_seed(2);
  auto p = torch::randn({300}).requires_grad_();
  auto q = p.detach().clone().requires_grad_();
  torch::optim::AdamW reference({q}, torch::optim::AdamWOptions(0.01).weight_decay(0.1));
  optim::OffloadOverlap overlap;
  overlap.enabled = true, overlap.synchronous_steps = 0;
  auto offload = optim::make_offload_adam(optim::AdamHyper{true, 0.01, 0.9, 0.999, 1e-8}, 0.1, {p}, {}, false, overlap);
  for (int step = 0; step < 3; ++step) {
    const auto grad = torch::randn({300});
    p.mutable_grad() = grad.clone();
    q.mutable_grad() = grad.clone();
    const auto before = p.detach().clone();
    offload->step();
    reference.step();
    EXPECT_TRUE(torch::equal(p.detach(), before)) << "step " << step << ": not yet in the weights";
    offload->flush();
    EXPECT_TRUE(torch::allclose(p.detach(), q.detach(), 1e-6, 1e-6)) << "step " << step;
  }
  // FINISHED says where the host's time went: each update's seconds and rate, and the steps' waits.
  nlohmann::json finished;
  offload->describe(finished);
  EXPECT_GT(finished.value("offload_host_update_s", 0.0), 0.0);
  EXPECT_NEAR(finished.value("offload_host_parameters_per_s", 0.0) * finished.value("offload_host_update_s", 0.0),
              300.0, 1e-6);
  EXPECT_GE(finished.value("offload_host_threads", 0), 1);
  EXPECT_GE(finished.value("offload_overlap_wait_s", -1.0), 0.0);
}

// The host update of a bf16 parameter: the same arithmetic as the float one on the gradient's bf16
// values, and the weight handed back rounded exactly as ATen's cast rounds it (ties to even, NaN,
// infinities, the largest values and subnormals among them; a NaN stays a NaN).
TEST(Switches, TheBf16HostUpdateIsTheFloatOneAndHandsBackAtensCast) {
  torch::manual_seed(5);
  const std::int64_t n = 4099;  // not a multiple of a vector's lanes
  const auto grad = torch::randn({n}).to(torch::kBFloat16);
  const optim::CpuAdamCoefficients c{true, 0.99f, 0.1f, 0.9f, 0.1f, 0.999f, 0.001f, 0.05f, 1e-8f, -0.01f};
  auto p = torch::randn({n}), m = torch::randn({n}) * 0.1, v = torch::rand({n}) * 0.01;
  auto p2 = p.clone(), m2 = m.clone(), v2 = v.clone();
  const auto g = grad.to(torch::kFloat);
  auto exchange = grad.clone();
  auto* bits = reinterpret_cast<std::uint16_t*>(exchange.data_ptr<at::BFloat16>());
  cpu_adam(p.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(), g.data_ptr<float>(), 0, n, c);
  cpu_adam_bf16(p2.data_ptr<float>(), m2.data_ptr<float>(), v2.data_ptr<float>(), bits, 0, n, c);
  EXPECT_TRUE(torch::equal(p2, p) && torch::equal(m2, m) && torch::equal(v2, v)) << "the masters and moments";
  EXPECT_TRUE(torch::equal(exchange, p.to(torch::kBFloat16))) << "the weight handed back";

  // With no step and no gradient the masters stay as they are: the hand-back is the cast of any float.
  const optim::CpuAdamCoefficients still{true, 1.0f, 0.0f, 0.9f, 0.1f, 0.999f, 0.001f, 1.0f, 1e-8f, 0.0f};
  const float specials[] = {1.0f + 0.5f / 128,  // a tie between two bf16 values: to the even one
                            1.0f + 1.5f / 128,
                            -3.0f - 0.5f / 64,
                            3.389e38f,  // rounds to infinity
                            -3.0e38f,
                            1e-40f,  // subnormal
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            0.0f,
                            -0.0f};
  auto w =
      torch::cat({torch::tensor(std::vector<float>(std::begin(specials), std::end(specials))), torch::randn({50})});
  const auto k = w.numel();
  auto zeros = torch::zeros({k}), zeros2 = torch::zeros({k});
  auto hand_back = torch::zeros({k}, torch::kBFloat16);
  cpu_adam_bf16(w.data_ptr<float>(), zeros.data_ptr<float>(), zeros2.data_ptr<float>(),
                reinterpret_cast<std::uint16_t*>(hand_back.data_ptr<at::BFloat16>()), 0, k, still);
  const auto want = w.to(torch::kBFloat16);
  for (std::int64_t i = 0; i < k; ++i) {
    const auto ours = reinterpret_cast<const std::uint16_t*>(hand_back.data_ptr<at::BFloat16>())[i];
    const auto atens = reinterpret_cast<const std::uint16_t*>(want.data_ptr<at::BFloat16>())[i];
    if (std::isnan(w[i].item<float>()))  // a NaN's bits differ between ATen's own casts (scalar, vector, CUDA)
      EXPECT_TRUE(std::isnan(hand_back[i].item<float>())) << "element " << i;
    else
      EXPECT_EQ(ours, atens) << "element " << i << " (" << w[i].item<float>() << ")";
  }
}

// Through the optimizer, a bf16 parameter's gradient in and weight out by the exchange buffer: the
// weights are torch::optim's AdamW's rounded to bf16 (a master a hair from a rounding boundary may
// round to the neighbouring value), step after step, synchronous or overlapped.
TEST(Switches, OffloadedBf16WeightsAreTorchOptimsAdamWsRounded) {
  for (const bool overlapped : {false, true}) {
    SCOPED_TRACE(overlapped ? "overlapped" : "synchronous");
    torch::manual_seed(4);
    const auto start = torch::randn({5000});
    auto p = start.clone().requires_grad_();
    auto q = start.clone().requires_grad_();
    torch::optim::AdamW reference({q}, torch::optim::AdamWOptions(0.1).weight_decay(0.1));
    optim::OffloadOverlap overlap;
    overlap.enabled = overlapped, overlap.synchronous_steps = 0;
    auto offload = optim::make_offload_adam(optim::AdamHyper{true, 0.1, 0.9, 0.999, 1e-8}, 0.1, {p}, {}, true, overlap);
    ASSERT_EQ(p.scalar_type(), torch::kBFloat16);
    for (int step = 0; step < 4; ++step) {
      const auto grad = torch::randn({5000}).to(torch::kBFloat16);
      p.mutable_grad() = grad.clone();
      q.mutable_grad() = grad.to(torch::kFloat);
      offload->step();
      reference.step();
      offload->flush();
      const auto want = q.detach().to(torch::kBFloat16).to(torch::kFloat);
      EXPECT_TRUE(torch::allclose(p.detach().to(torch::kFloat), want, 8e-3, 1e-6)) << "step " << step;
      EXPECT_GE(p.detach().to(torch::kFloat).eq(want).to(torch::kFloat).mean().item<double>(), 0.999)
          << "step " << step;
    }
  }
}

// bf16_weights keeps the classifier's Linear weight in bf16 (the convolutions and batch norms are no
// Linear layers) with an fp32 master: the products are autocast's of the fp32 weight, and the loss
// curve is the one with fp32 weights under autocast, clipping inside the step included.
TEST(Switches, Bf16WeightsGiveTheLossOfFp32WeightsUnderAutocast) {
  const std::string o = "precision: bf16\noptimizer: adamw\nlr: 0.01\nfused_optimizer: foreach\nclip_grad_norm: 0.05\n";
  const auto reference = losses(o + "bf16_weights: false\n", 8);
  expect_close(losses(o + "bf16_weights: true\n", 8), reference, 1e-5);
  EXPECT_LT(reference.back(), reference.front());
}

// The step with masters is AdamW on the fp32 masters from the bf16 gradients, rounded into the bf16
// weights; the embedding's weight and the 1-D parameters stay fp32 and step as before; at the end
// the masters become the parameters.
TEST(Switches, Bf16WeightsStepFp32MastersAndRoundThemIntoTheWeights) {
  struct NetImpl : torch::nn::Module {
    torch::nn::Embedding embed{nullptr};
    torch::nn::Linear proj{nullptr};
    torch::Tensor scale;
    NetImpl() {
      embed = register_module("embed", torch::nn::Embedding(10, 16));
      proj = register_module("proj", torch::nn::Linear(16, 32));
      scale = register_parameter("scale", torch::ones({32}));
    }
  };
  torch::manual_seed(11);
  auto net = std::make_shared<NetImpl>();
  const auto w0 = net->proj->weight.detach().clone(), e0 = net->embed->weight.detach().clone();
  auto rw = w0.clone().requires_grad_(), re = e0.clone().requires_grad_();
  torch::optim::AdamW reference({rw, re}, torch::optim::AdamWOptions(0.05).weight_decay(0.1));
  const auto cfg = test::toy_config_for("optimizer: adamw\nlr: 0.05\nweight_decay: 0.1\nbf16_weights: true\n");
  auto ours = optim::make_optimizer(optim::read_optimizer_settings(cfg), *net, optim::OptimizerImpl::Foreach);
  EXPECT_EQ(net->proj->weight.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(net->proj->bias.scalar_type(), torch::kFloat);
  EXPECT_EQ(net->embed->weight.scalar_type(), torch::kFloat);
  EXPECT_EQ(net->scale.scalar_type(), torch::kFloat);
  for (int step = 0; step < 4; ++step) {
    ours->zero_grad();
    const auto gw = torch::randn({32, 16}).to(torch::kBFloat16), ge = torch::randn({10, 16});
    net->proj->weight.mutable_grad() = gw.clone();
    net->proj->bias.mutable_grad() = torch::randn({32});
    net->embed->weight.mutable_grad() = ge.clone();
    net->scale.mutable_grad() = torch::randn({32});
    rw.mutable_grad() = gw.to(torch::kFloat), re.mutable_grad() = ge.clone();
    ours->step();
    reference.step();
    // A master a hair from a rounding boundary may round to the neighbouring bf16 value (2^-8 relative).
    EXPECT_TRUE(torch::allclose(net->proj->weight.detach().to(torch::kFloat), rw.detach(), 8e-3, 1e-6)) << step;
    EXPECT_TRUE(torch::allclose(net->embed->weight.detach(), re.detach(), 1e-6, 1e-7)) << step;
  }
  ours->write_master_weights();
  ASSERT_EQ(net->proj->weight.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::allclose(net->proj->weight.detach(), rw.detach(), 1e-6, 1e-7));
}

// On CUDA the fused step with masters (one kernel a tensor, clipping read on the device) gives the
// foreach step's masters and weights.
TEST(Switches, OnCudaTheBf16WeightsKernelIsTheForeachStep) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device (run on the GPU machine)";
  torch::manual_seed(13);
  const auto cfg = test::toy_config_for("optimizer: adamw\nlr: 0.05\nweight_decay: 0.1\nbf16_weights: true\n");
  // 64,064 weights (the kernel's four-element loads) and 7,007 (its element-by-element loop).
  const auto make = [] { return torch::nn::Sequential(torch::nn::Linear(64, 1001), torch::nn::Linear(1001, 7)); };
  auto fused_net = make(), foreach_net = make();
  for (std::size_t i = 0; i < fused_net->parameters().size(); ++i)
    foreach_net->parameters()[i].set_data(fused_net->parameters()[i].detach().clone());
  fused_net->to(torch::kCUDA), foreach_net->to(torch::kCUDA);
  auto fused = optim::make_optimizer(optim::read_optimizer_settings(cfg), *fused_net, optim::OptimizerImpl::Fused);
  auto foreach =
      optim::make_optimizer(optim::read_optimizer_settings(cfg), *foreach_net, optim::OptimizerImpl::Foreach);
  for (int step = 0; step < 4; ++step) {
    const auto a = fused_net->parameters(), b = foreach_net->parameters();
    for (std::size_t i = 0; i < a.size(); ++i) {
      const auto g = (torch::randn(a[i].sizes(), torch::kCUDA) * (step == 2 ? 1e-3 : 3.0)).to(a[i].scalar_type());
      a[i].mutable_grad() = g.clone(), b[i].mutable_grad() = g.clone();
    }
    ASSERT_TRUE(fused->clip_in_step(optim::gradient_norm(a), 1.0));  // clipped in steps 0, 1, 3
    ASSERT_TRUE(foreach->clip_in_step(optim::gradient_norm(b), 1.0));
    fused->step();
    foreach
      ->step();
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].scalar_type(), a[i].dim() == 2 ? torch::kBFloat16 : torch::kFloat);
      // bf16 weights: a master a hair from a rounding boundary may round the other way (2^-8 relative).
      EXPECT_TRUE(torch::allclose(a[i].detach().to(torch::kFloat), b[i].detach().to(torch::kFloat),
                                  a[i].dim() == 2 ? 8e-3 : 1e-6, 1e-6))
          << "step " << step << ", parameter " << i;
    }
  }
  fused->write_master_weights(), foreach->write_master_weights();
  for (std::size_t i = 0; i < fused_net->parameters().size(); ++i)
    EXPECT_TRUE(torch::allclose(fused_net->parameters()[i].detach(), foreach_net->parameters()[i].detach(), 1e-5, 1e-6))
        << "the masters, parameter " << i;
}

TEST(Switches, ChannelsLastGivesTheSameLoss) {
  expect_close(losses("channels_last: true\n"), losses("channels_last: false\n"), 1e-4);
}

TEST(Switches, CudnnBenchmarkIsHarmlessWithoutCuda) {
  expect_close(losses("cudnn_benchmark: true\n"), losses("cudnn_benchmark: false\n"), 0);
}

TEST(Switches, Bf16AutocastStaysWithinBf16Precision) {
  // bfloat16 keeps 8 bits of mantissa: a relative 2^-8 per operation; a few percent over six steps.
  expect_close(losses("precision: bf16\n"), losses("precision: fp32\n"), 0.03);
}

// On CUDA the offloaded update's copies are queued (gradients converted on the device into the pinned
// buffers, the masters sent back as floats and converted there): the weights are torch::optim's
// AdamW's on the host, in fp32, and rounded to bf16 where the device keeps bf16, step after step,
// with the update synchronous or overlapped.
TEST(Switches, OnCudaTheOffloadedOptimizerIsTorchOptimsAdamW) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device (run on the GPU machine)";
  for (const bool bf16 : {false, true}) {
    for (const bool overlapped : {false, true}) {
      SCOPED_TRACE(std::string(bf16 ? "bf16" : "fp32") + (overlapped ? ", overlapped" : ""));
      torch::manual_seed(3);
      const auto start = torch::randn({4096});
      auto p = start.to(torch::kCUDA).requires_grad_();
      auto q = start.clone().requires_grad_();
      // A large rate: a weight a step behind, or one not sent back, is off by more than bf16's rounding.
      torch::optim::AdamW reference({q}, torch::optim::AdamWOptions(0.1).weight_decay(0.1));
      optim::OffloadOverlap overlap;
      overlap.enabled = overlapped, overlap.synchronous_steps = 0;
      auto offload =
          optim::make_offload_adam(optim::AdamHyper{true, 0.1, 0.9, 0.999, 1e-8}, 0.1, {p}, {}, bf16, overlap);
      for (int step = 0; step < 4; ++step) {
        const auto grad = torch::randn({4096});
        p.mutable_grad() = grad.to(p.device(), p.scalar_type());
        q.mutable_grad() = grad.to(p.scalar_type()).to(torch::kFloat);  // what the device's gradient holds
        offload->step();
        reference.step();
        offload->flush();
        // The masters equal the reference's weights to float's rounding; in bf16 a master a hair from a
        // rounding boundary may round to the neighbouring value (one unit: 2^-8 relative).
        const auto want = q.detach().to(p.scalar_type()).to(torch::kFloat);
        EXPECT_TRUE(torch::allclose(p.detach().cpu().to(torch::kFloat), want, bf16 ? 8e-3 : 1e-6, 1e-6))
            << "step " << step;
      }
    }
  }
}

TEST(Switches, OnCudaTheFusedStepAndTheLayoutSwitchesKeepTheLoss) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device (run on the GPU machine)";
  const std::string cuda = "device: cuda\n";
  for (const char* optimizer : {"sgd", "adamw"}) {
    SCOPED_TRACE(optimizer);
    const std::string o = cuda + "optimizer: " + optimizer + "\n" + (optimizer[0] == 'a' ? "lr: 0.01\n" : "");
    const auto reference = losses(o + "fused_optimizer: off\n");
    expect_close(losses(o + "fused_optimizer: foreach\n"), reference, 1e-5);
    expect_close(losses(o + "fused_optimizer: fused\n"), reference, 1e-5);
  }
  // cuDNN picks other algorithms for NHWC and when timing them, with TF32 in its convolutions
  // (LibTorch's default): equal to about 1e-3.
  expect_close(losses(cuda + "channels_last: true\ncudnn_benchmark: true\n"), losses(cuda), 5e-3);
  expect_close(losses(cuda + "precision: bf16\n"), losses(cuda), 0.03);
  // Three eager steps, the capture, then replays: the same kernels, the same losses.
  expect_close(losses(cuda + "cuda_graphs: true\nprecision: bf16\n"), losses(cuda + "precision: bf16\n"), 1e-4);
}

TEST(Switches, CudaGraphsAreRefusedWhereTheyCannotRun) {
  try {
    losses("cuda_graphs: true\n");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("graphs need a device whose vendor brings them"), std::string::npos)
        << e.what();
  }
}

TEST(Switches, FusedOptimizerOnTheCpuIsRefusedWithTheAlternative) {
  try {
    losses("fused_optimizer: fused\n");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("foreach"), std::string::npos) << e.what();
  }
  EXPECT_THROW(losses("fused_optimizer: fast\n"), ConfigError);
}

TEST(Switches, WeightDecaySkipsOneDimensionalParametersWhenAsked) {
  // With a huge decay and no gradient signal (lr on decay only), the 1-D parameters keep their values.
  auto net = TinyConvNet(4);
  const auto bias_before = net->conv2->bias.clone();
  const auto weight_before = net->conv2->weight.clone();
  const Config cfg = test::toy_config_for("optimizer: sgd\nlr: 0.1\nweight_decay: 1.0\nweight_decay_skip_1d: true\n");
  for (const char* impl : {"off", "foreach"}) {
    SCOPED_TRACE(impl);
    auto n = TinyConvNet(4);
    n->conv2->bias.set_data(bias_before.clone());
    n->conv2->weight.set_data(weight_before.clone());
    auto opt = optim::make_optimizer(
        optim::read_optimizer_settings(cfg), *n,
        std::string(impl) == "off" ? optim::OptimizerImpl::Reference : optim::OptimizerImpl::Foreach);
    for (auto& p : n->parameters()) p.mutable_grad() = torch::zeros_like(p);
    opt->step();
    EXPECT_TRUE(torch::equal(n->conv2->bias, bias_before));
    EXPECT_TRUE(torch::allclose(n->conv2->weight, weight_before * 0.9));
  }
}

TEST(ImageData, IndexedDatasetSplitsAnEpochIntoBatchesOfTheRanksShard) {
  TensorDataset d({torch::arange(10)}, "ten");
  EpochPlan plan;
  plan.batch_size = 3;
  plan.train = true;
  plan.world_size = 2;
  plan.rank = 1;
  EXPECT_EQ(d.batches_in_epoch(plan), 2);  // 5 samples: 3 + 2
  d.start_epoch(plan);
  std::vector<std::int64_t> seen;
  int batches = 0;
  while (auto b = d.next_batch()) {
    ++batches;
    for (std::int64_t i = 0; i < (*b)[0].size(0); ++i) seen.push_back((*b)[0][i].item<std::int64_t>());
  }
  EXPECT_EQ(batches, 2);
  EXPECT_EQ(seen.size(), 5u);
  plan.train = false;
  plan.world_size = 3;
  plan.rank = 0;
  EXPECT_EQ(d.batches_in_epoch(plan), 2);  // 4 of 10 samples, unpadded: 3 + 1
}

TEST(ImageData, SyntheticImagesAreChannelsLastBytesTheSameForTheSameIndex) {
  datasets::SyntheticImageDataset d(1000, 10, 8, 3, torch::kCPU, "train");
  EXPECT_NE(d.description().find("synthetic train"), std::string::npos);
  EXPECT_NE(d.description().find("no accuracy"), std::string::npos);
  const auto a = d.get(torch::tensor({5, 70}, torch::kLong));
  const auto b = d.get(torch::tensor({70}, torch::kLong));
  EXPECT_EQ(a[0].sizes(), (std::vector<std::int64_t>{2, 3, 8, 8}));
  EXPECT_EQ(a[0].scalar_type(), torch::kUInt8);
  EXPECT_TRUE(a[0].is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::equal(a[0][1], b[0][0]));
  EXPECT_EQ(a[1][1].item<std::int64_t>(), 0);  // label: index mod classes
}

TEST(ImageData, NormalizeImagesAppliesImageNetsMeanAndStd) {
  const auto x = torch::full({1, 3, 2, 2}, 255, torch::kUInt8).contiguous(at::MemoryFormat::ChannelsLast);
  const auto y = datasets::ImageNormalizer()(x);
  EXPECT_TRUE(y.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_NEAR(y[0][0][0][0].item<float>(), (1 - 0.485f) / 0.229f, 1e-5);
  EXPECT_NEAR(y[0][2][1][1].item<float>(), (1 - 0.406f) / 0.225f, 1e-5);
}

TEST(ImageData, ExponentialScheduleMultipliesOnceAnEpoch) {
  EXPECT_DOUBLE_EQ(scheduled_lr("exponential", 0.1, 9, 0, 100, 10, 0.5), 0.1);
  EXPECT_DOUBLE_EQ(scheduled_lr("exponential", 0.1, 10, 0, 100, 10, 0.5), 0.05);
  EXPECT_DOUBLE_EQ(scheduled_lr("exponential", 0.1, 25, 0, 100, 10, 0.5), 0.025);
}

}  // namespace
}  // namespace xpuperf::train
