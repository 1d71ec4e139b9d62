#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <future>
#include <sstream>
#include <thread>

#include "ranks_util.h"
#include "toy_case.h"
#include "xpuperf/optim/optimizers.h"
#include "xpuperf/torchrt/compat.h"
#include "xpuperf/torchrt/distributed.h"
#include "xpuperf/train/precision.h"
#include "xpuperf/train/runtime.h"
#include "xpuperf/train/step_graph.h"

namespace xpuperf::train {
// The tests drive the layers below the runtime directly.
using namespace xpuperf::torchrt;
namespace {

TEST(LossScaler, SkipsNonFiniteStepsAndBacksOff) {
  LossScaler scaler(LossScaler::Options{1024.0, 2.0, 0.5, 3});
  auto p = torch::ones({3}, torch::requires_grad());
  p.mutable_grad() = torch::tensor({2048.0f, 1024.0f, std::numeric_limits<float>::infinity()});
  EXPECT_TRUE(scaler.unscale_and_check({p}));
  EXPECT_FALSE(scaler.update(true));
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 512.0);
  EXPECT_EQ(scaler.skipped_steps(), 1);
  p.mutable_grad() = torch::tensor({1024.0f, 512.0f, std::nanf("")});
  EXPECT_TRUE(scaler.unscale_and_check({p}));
}

TEST(LossScaler, UnscalesAndGrowsAfterGoodSteps) {
  LossScaler scaler(LossScaler::Options{1024.0, 2.0, 0.5, 3});
  auto p = torch::ones({2}, torch::requires_grad());
  p.mutable_grad() = torch::tensor({2048.0f, -512.0f});
  EXPECT_FALSE(scaler.unscale_and_check({p}));
  EXPECT_TRUE(torch::allclose(p.grad(), torch::tensor({2.0f, -0.5f})));
  EXPECT_TRUE(scaler.update(false));
  EXPECT_TRUE(scaler.update(false));
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 1024.0);
  EXPECT_TRUE(scaler.update(false));  // the third good step in a row
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 2048.0);
  EXPECT_TRUE(torch::allclose(scaler.scale(torch::tensor(1.5f)), torch::tensor(3072.0f)));
}

// fp16 under cuda_graphs: the captured step multiplies the loss by the scaler's tensor, so a scale
// changed after the capture (halved by an overflow, doubled by good steps) reaches the gradients of
// the next replay.
TEST(LossScaler, ACapturedStepReadsTheScaleOfEachStep) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  const torch::Device cuda(torch::kCUDA, 0);
  if (!StepGraph::available(cuda)) GTEST_SKIP() << "this build has no CUDA graphs (NVIDIA's plug-in)";
  auto p = torch::ones({4}, torch::TensorOptions().device(cuda).requires_grad(true));
  const auto x = torch::arange(1, 5, torch::TensorOptions().dtype(torch::kFloat).device(cuda));
  LossScaler scaler(LossScaler::Options{1024.0, 2.0, 0.5, 2});
  StepGraph graph(cuda, {p}, /*eager_steps=*/1);
  const StepGraph::Step step = [&](const Batch& b) {
    auto loss = (p * b[0]).sum();
    scaler.scale(loss).backward();
    return loss.detach();
  };
  std::vector<double> scales;
  for (int i = 0; i < 5; ++i) {
    const double scale = scaler.current_scale();
    scales.push_back(scale);
    p.mutable_grad() = torch::Tensor();
    graph.run({x}, step);
    EXPECT_TRUE(torch::allclose(p.grad(), x * scale)) << "step " << i << ", scale " << scale;
    EXPECT_FALSE(scaler.unscale_and_check({p}));
    EXPECT_TRUE(torch::allclose(p.grad(), x)) << "step " << i;
    scaler.update(/*found_inf=*/i == 2);
  }
  EXPECT_EQ(scales, (std::vector<double>{1024, 1024, 2048, 1024, 1024}));
  EXPECT_EQ(graph.replays(), 4);  // the first step eager, the second captured and replayed
}

// fp16 with the fused AdamW: the scaler's flag stays on the device and the kernel skips the step
// itself, so no step waits for the device; the weights, the scale and the skipped steps are what the
// host's decision gives.
TEST(LossScaler, OnTheDeviceTheFusedAdamSkipsWhatTheHostWouldSkip) {
  if (!torch::cuda::is_available() || !compat::kTorch2)
    GTEST_SKIP() << "needs a CUDA device and LibTorch 2.x (the fused AdamW)";
  const torch::Device cuda(torch::kCUDA, 0);
  const Config cfg = test::toy_config_for("optimizer: adamw\nlr: 0.01\nweight_decay: 0.1\n");
  const auto start = torch::randn({64}, torch::TensorOptions().device(cuda));
  std::vector<torch::Tensor> weights;
  std::vector<double> scales;
  std::vector<std::int64_t> skipped;
  for (const bool on_device : {false, true}) {
    auto p = start.clone().requires_grad_(true);
    auto opt = optim::make_optimizer(optim::read_optimizer_settings(cfg), {p}, {}, optim::OptimizerImpl::Fused);
    ASSERT_TRUE(opt->skips_on_device());
    LossScaler scaler(LossScaler::Options{1024.0, 2.0, 0.5, 2});
    for (int i = 0; i < 7; ++i) {
      p.mutable_grad() = torch::Tensor();
      const double blow_up = i == 2 || i == 5 ? INFINITY : 1.0;  // two steps whose gradients are not finite
      scaler.scale((p * p).sum() * blow_up).backward();
      if (on_device) {
        opt->step_unless(scaler.unscale_and_update_on_device({p}));
      } else if (scaler.update(scaler.unscale_and_check({p}))) {
        opt->step();
      }
    }
    weights.push_back(p.detach());
    scales.push_back(scaler.current_scale());
    skipped.push_back(scaler.skipped_steps());
  }
  EXPECT_TRUE(torch::allclose(weights[0], weights[1], 1e-6, 1e-7));
  EXPECT_FALSE(torch::allclose(weights[0], start));
  EXPECT_EQ(scales[0], scales[1]);
  EXPECT_EQ(skipped, (std::vector<std::int64_t>{2, 2}));
}

TEST(Autocast, ScopesBf16OnTheCpuAndRestores) {
  auto a = torch::randn({4, 4});
  {
    AutocastScope scope(torch::kCPU, Precision::BF16);
    EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kBFloat16);
    {
      AutocastScope off(torch::kCPU, Precision::FP32);  // "off" leaves the outer scope alone
      EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kBFloat16);
    }
  }
  EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kFloat);
  EXPECT_THROW(parse_precision("fp8"), std::invalid_argument);
  EXPECT_EQ(parse_precision("fp16"), Precision::FP16);
}

TEST(Buckets, GroupInReverseOrderUpToTheSizeAndByDtype) {
  std::vector<torch::Tensor> t = {torch::zeros({10}), torch::zeros({10}), torch::zeros({10}),
                                  torch::zeros({10}, torch::kDouble)};
  // 40 bytes each as float; a cap of 80 bytes holds two.
  const auto buckets = plan_buckets(t, 80);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0], std::vector<std::size_t>{3});  // the double tensor alone
  EXPECT_EQ(buckets[1], (std::vector<std::size_t>{2, 1}));
  EXPECT_EQ(buckets[2], std::vector<std::size_t>{0});
  EXPECT_EQ(plan_buckets(t, 1 << 20).size(), 2u);
}

TEST(Distributed, AveragesGradientsInBucketsAndBroadcastsParameters) {
  SKIP_WITHOUT_GLOO();
  std::vector<torch::Tensor> params_of[2];
  int buckets[2] = {0, 0};
  on_two_ranks([&](int rank, int port) {
    DistributedOptions options;
    options.bucket_bytes = 64;  // several buckets for these small tensors
    auto dist = Distributed::create(env_for(rank, 2, port), torch::kCPU, options);
    EXPECT_EQ(dist->backend(), "gloo");
    std::vector<torch::Tensor> params = {torch::full({8}, static_cast<float>(rank) + 1.0f, torch::requires_grad()),
                                         torch::full({20}, static_cast<float>(rank) * 10.0f, torch::requires_grad())};
    dist->broadcast_parameters(params);
    params[0].mutable_grad() = torch::full({8}, rank == 0 ? 1.0f : 3.0f);
    params[1].mutable_grad() = torch::full({20}, rank == 0 ? -2.0f : 4.0f);
    dist->average_gradients(params);
    buckets[rank] = dist->last_bucket_count();
    auto sum = torch::tensor({static_cast<double>(rank + 1)});
    dist->all_reduce_sum(sum);
    EXPECT_DOUBLE_EQ(sum.item<double>(), 3.0);
    params_of[rank] = params;
    dist->barrier();
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(torch::equal(params_of[rank][0].detach(), torch::full({8}, 1.0f))) << "rank 0's values everywhere";
    EXPECT_TRUE(torch::equal(params_of[rank][1].detach(), torch::zeros({20})));
    EXPECT_TRUE(torch::equal(params_of[rank][0].grad(), torch::full({8}, 2.0f)));
    EXPECT_TRUE(torch::equal(params_of[rank][1].grad(), torch::full({20}, 1.0f)));
    EXPECT_EQ(buckets[rank], 2);
  }
}

// With sum_low_precision_in_fp32 (bf16_weights), bf16 gradients are summed in fp32 and rounded
// once into their own type, after the reduction and with it overlapped alike.
TEST(Distributed, Bf16GradientsAreSummedInFp32AndStayBf16) {
  SKIP_WITHOUT_GLOO();
  // Not from the random generator, which the two ranks' threads share.
  const auto gradient_of = [](int rank) {
    return (torch::sin(torch::arange(40, torch::kFloat) * (0.7 + rank)) * 3.0).to(torch::kBFloat16);
  };
  torch::Tensor after_backward[2], overlapped[2];
  on_two_ranks([&](int rank, int port) {
    DistributedOptions options;
    options.bucket_bytes = 64;
    options.sum_low_precision_in_fp32 = true;
    auto dist = Distributed::create(env_for(rank, 2, port), torch::kCPU, options);
    const auto grad = gradient_of(rank);
    std::vector<torch::Tensor> params = {torch::zeros({40}, torch::dtype(torch::kBFloat16).requires_grad(true))};
    params[0].mutable_grad() = grad.clone();
    dist->average_gradients(params);
    after_backward[rank] = params[0].grad().clone();
    // The same gradient through the hooks, arriving during backward.
    std::vector<torch::Tensor> hooked = {torch::zeros({40}, torch::dtype(torch::kBFloat16).requires_grad(true))};
    dist->attach_gradient_hooks(hooked);
    dist->begin_step();
    (hooked[0] * grad).sum().backward();
    dist->finish_step(hooked);
    overlapped[rank] = hooked[0].grad().clone();
  });
  const auto want = ((gradient_of(0).to(torch::kFloat) + gradient_of(1).to(torch::kFloat)) * 0.5).to(torch::kBFloat16);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(after_backward[rank].scalar_type(), torch::kBFloat16);
    EXPECT_EQ(overlapped[rank].scalar_type(), torch::kBFloat16);
    EXPECT_TRUE(torch::equal(after_backward[rank], want)) << rank;
    EXPECT_TRUE(torch::equal(overlapped[rank], want)) << rank;
  }
}

// The all-to-all the experts' tokens travel by: chunk j of each rank's rows to rank j, in fp32 and
// in bf16 (which Gloo lacks: sent widened, exactly).
TEST(Distributed, AllToAllSendsChunkJToRankJInFp32AndBf16) {
  SKIP_WITHOUT_GLOO();
  torch::Tensor received[2][2];
  on_two_ranks([&](int rank, int port) {
    auto dist = Distributed::create(env_for(rank, 2, port), torch::kCPU, DistributedOptions{});
    for (int k = 0; k < 2; ++k) {
      const auto type = k == 0 ? torch::kFloat : torch::kBFloat16;
      // Rank r's rows r·10 + 0.125·i: exact in bf16.
      auto in = (torch::arange(4, torch::kFloat) * 0.125 + 10.0 * rank).reshape({4, 1}).to(type);
      auto out = torch::empty_like(in);
      dist->all_to_all(out, in);
      received[rank][k] = out;
    }
  });
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(received[0][k].scalar_type(), k == 0 ? torch::kFloat : torch::kBFloat16);
    // Rank 0 receives rows 0-1 of each rank, rank 1 rows 2-3.
    EXPECT_TRUE(
        torch::equal(received[0][k].to(torch::kFloat).flatten(), torch::tensor({0.0f, 0.125f, 10.0f, 10.125f})));
    EXPECT_TRUE(
        torch::equal(received[1][k].to(torch::kFloat).flatten(), torch::tensor({0.25f, 0.375f, 10.25f, 10.375f})));
  }
}

// Tensor and sequence parallelism's collectives on bf16 activations, which LibTorch 1.13's Gloo
// lacks: sent widened, exactly, waited for or started.
TEST(Distributed, Bf16SumsGathersAndScattersGoThroughGlooExactly) {
  SKIP_WITHOUT_GLOO();
  torch::Tensor summed[2], started_sum[2], gathered[2], scattered[2];
  on_two_ranks([&](int rank, int port) {
    auto dist = Distributed::create(env_for(rank, 2, port), torch::kCPU, DistributedOptions{});
    // Rank r's values r·10 + 0.125·i: exact in bf16, and so are their sums.
    const auto values = (torch::arange(4, torch::kFloat) * 0.125 + 10.0 * rank).to(torch::kBFloat16);
    auto sum = values.clone();
    dist->all_reduce_sum(sum);
    summed[rank] = sum;
    auto started = values.clone();
    dist->start_all_reduce_sum(started)();
    started_sum[rank] = started;
    auto in = values.clone(), all = torch::empty({8}, values.options());
    dist->start_all_gather(all, in)();
    gathered[rank] = all;
    auto share = torch::empty({2}, values.options());
    auto whole = values.clone();
    dist->reduce_scatter_sum(share, whole);
    scattered[rank] = share;
  });
  const auto sum = torch::tensor({10.0f, 10.25f, 10.5f, 10.75f});
  for (int rank = 0; rank < 2; ++rank) {
    for (const auto& t : {summed[rank], started_sum[rank], gathered[rank], scattered[rank]})
      EXPECT_EQ(t.scalar_type(), torch::kBFloat16);
    EXPECT_TRUE(torch::equal(summed[rank].to(torch::kFloat), sum)) << rank;
    EXPECT_TRUE(torch::equal(started_sum[rank].to(torch::kFloat), sum)) << rank;
    EXPECT_TRUE(torch::equal(gathered[rank].to(torch::kFloat),
                             torch::tensor({0.0f, 0.125f, 0.25f, 0.375f, 10.0f, 10.125f, 10.25f, 10.375f})))
        << rank;
    EXPECT_TRUE(torch::equal(scattered[rank].to(torch::kFloat), sum.narrow(0, 2 * rank, 2))) << rank;
  }
}

TEST(Distributed, OverlappedReductionAveragesDuringBackward) {
  SKIP_WITHOUT_GLOO();
  std::vector<torch::Tensor> grads_of[2][2];
  bool overlapping[2] = {false, false};
  on_two_ranks([&](int rank, int port) {
    DistributedOptions options;
    options.bucket_bytes = 64;
    auto dist = Distributed::create(env_for(rank, 2, port), torch::kCPU, options);
    std::vector<torch::Tensor> params = {torch::ones({8}, torch::requires_grad()),
                                         torch::ones({20}, torch::requires_grad())};
    dist->attach_gradient_hooks(params);
    const float scale = static_cast<float>(rank) + 1.0f;
    for (int step = 0; step < 2; ++step) {  // the buffers are reused from step to step
      for (auto& p : params)
        if (p.grad().defined()) p.mutable_grad().zero_();
      dist->begin_step();
      ((params[0] * scale).sum() + (params[1] * (2.0f * scale + static_cast<float>(step))).sum()).backward();
      dist->finish_step(params);
      grads_of[rank][step] = {params[0].grad().clone(), params[1].grad().clone()};
    }
    overlapping[rank] = dist->overlapping();
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(overlapping[rank]);
    EXPECT_TRUE(torch::equal(grads_of[rank][0][0], torch::full({8}, 1.5f)));
    EXPECT_TRUE(torch::equal(grads_of[rank][0][1], torch::full({20}, 3.0f)));
    EXPECT_TRUE(torch::equal(grads_of[rank][1][1], torch::full({20}, 4.0f)));
  }
}

TEST(Distributed, TwoBackwardPassesInOneStepFallBackToReducingAfterBackward) {
  SKIP_WITHOUT_GLOO();
  torch::Tensor grad_of[2];
  bool overlapping[2] = {true, true};
  on_two_ranks([&](int rank, int port) {
    auto dist = Distributed::create(env_for(rank, 2, port), torch::kCPU, DistributedOptions{});
    std::vector<torch::Tensor> params = {torch::ones({4}, torch::requires_grad())};
    dist->attach_gradient_hooks(params);
    dist->begin_step();
    // Two backward passes (gradient accumulation): the gradient arrives in two parts, (rank + 1) and 1.
    (params[0] * (static_cast<float>(rank) + 1.0f)).sum().backward();
    params[0].sum().backward();
    dist->finish_step(params);
    grad_of[rank] = params[0].grad().clone();
    overlapping[rank] = dist->overlapping();
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_FALSE(overlapping[rank]);
    EXPECT_TRUE(torch::equal(grad_of[rank], torch::full({4}, 2.5f))) << grad_of[rank];
  }
}

TEST(Distributed, TwoRanksEndWithIdenticalParameters) {
  SKIP_WITHOUT_GLOO();
  test::ToyCase cases[2];
  TrainingOutcome outcomes[2];
  on_two_ranks([&](int rank, int port) {
    const Config config = test::toy_config_for("max_epochs: 2\n");
    RunInfo info;
    info.case_name = "toy:libtorch";
    info.env = env_for(rank, 2, port);
    std::ostringstream out;
    outcomes[rank] = run_training(cases[rank], config, info, out);
  });
  // Each rank read a different shard, yet the averaged gradients keep the models equal.
  EXPECT_TRUE(torch::equal(cases[0].linear->weight, cases[1].linear->weight));
  EXPECT_TRUE(torch::equal(cases[0].linear->bias, cases[1].linear->bias));
  EXPECT_EQ(*outcomes[0].finished.global_steps, 8);  // 256 samples / 2 ranks / 32
  EXPECT_EQ(*outcomes[0].finished.num_trained_samples, 512);
  EXPECT_EQ(outcomes[0].final_metrics, outcomes[1].final_metrics);  // metrics reduced over ranks
}

TEST(Distributed, ARankThatCannotReachTheStoreTimesOutWithAMessage) {
  DistributedOptions options;
  options.timeout = std::chrono::milliseconds(1500);
  const auto start = std::chrono::steady_clock::now();
  try {
    Distributed::create(env_for(1, 2, free_local_port()), torch::kCPU, options);
    FAIL() << "expected DistributedError";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 cannot reach the rendezvous store at 127.0.0.1:"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

}  // namespace
}  // namespace xpuperf::train
