// torchrt::init_normal: the values of small tensors as torch::nn::init::normal_ gives them, and for
// large ones the same values on any number of threads, decided by the seed, and normal.
#include "xpuperf/torchrt/init.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

using xpuperf::torchrt::init_normal;
using xpuperf::torchrt::kParallelInitElements;

// A parameter, as a model's constructor fills it (autograd records in-place changes to it).
torch::Tensor filled(std::int64_t numel, std::uint64_t seed, int threads) {
  const int before = at::get_num_threads();
  at::set_num_threads(threads);
  torch::manual_seed(seed);
  auto t = torch::empty({numel}, torch::requires_grad());
  init_normal(t, 0.5, 0.02);
  at::set_num_threads(before);
  return t;
}

TEST(Initialisation, ASmallTensorGetsTheValuesOfTorchsNormal) {
  torch::manual_seed(7);
  auto ours = torch::empty({64, 48});
  init_normal(ours, 0.0, 0.02);
  torch::manual_seed(7);
  auto reference = torch::empty({64, 48});
  torch::nn::init::normal_(reference, 0.0, 0.02);
  EXPECT_TRUE(torch::equal(ours, reference));
}

TEST(Initialisation, ALargeTensorIsTheSameOnAnyNumberOfThreadsAndFollowsTheSeed) {
  const std::int64_t n = kParallelInitElements + 12345;  // a last piece shorter than the rest
  const auto one = filled(n, 3, 1).detach(), four = filled(n, 3, 4).detach();
  EXPECT_TRUE(torch::equal(one, four));
  EXPECT_FALSE(torch::equal(one, filled(n, 4, 4).detach()));
  // Each piece draws values of its own, not one stream repeated.
  const std::int64_t piece = 1 << 20;
  EXPECT_FALSE(torch::equal(one.narrow(0, 0, 1000), one.narrow(0, piece, 1000)));
  EXPECT_NEAR(one.mean().item<double>(), 0.5, 1e-4);
  EXPECT_NEAR(one.std().item<double>(), 0.02, 1e-4);
  // Every value written, the short last piece's too.
  EXPECT_NEAR(one.narrow(0, n - 10000, 10000).mean().item<double>(), 0.5, 2e-3);
}

TEST(Initialisation, ALargeNonContiguousTensorIsFilledWhole) {
  auto t = torch::zeros({2048, 4096}).t();
  init_normal(t, 0.0, 1.0);
  EXPECT_NEAR(t.std().item<double>(), 1.0, 1e-2);
  EXPECT_EQ(t.eq(0).sum().item<std::int64_t>(), 0);
}

}  // namespace
