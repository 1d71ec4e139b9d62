// The per-operator profile of an inference pass (infer/op_profile.h): counts, inclusive and self
// times on the CPU's clock, and on a GPU the inference kernels of our own as operators.

#include "xpuperf/infer/op_profile.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <string>

#include "xpuperf/models/fused_ops.h"

namespace xpuperf::infer {
namespace {

TEST(OpProfile, CallersIncludeTheirCalleesAndSelfTimesAddUpToThePass) {
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({64, 256}), w = torch::randn({512, 256}), b = torch::randn({512});
  const auto ops = profile_ops(
      [&] {
        for (int i = 0; i < 3; ++i) torch::relu(torch::linear(x, w, b));
      },
      torch::kCPU);
  const auto find = [&](const std::string& name) -> const OpTime* {
    for (const auto& o : ops)
      if (o.name == name) return &o;
    return nullptr;
  };
  const OpTime* linear = find("aten::linear");
  const OpTime* addmm = find("aten::addmm");
  const OpTime* relu = find("aten::relu");
  ASSERT_TRUE(linear && addmm && relu) << op_profile_table(ops, 20);
  EXPECT_EQ(linear->calls, 3);
  EXPECT_EQ(relu->calls, 3);
  EXPECT_GE(linear->total_ms, addmm->total_ms);  // linear calls addmm
  EXPECT_LT(linear->self_ms, linear->total_ms);
  for (const auto& o : ops) EXPECT_LE(o.self_ms, o.total_ms + 1e-9) << o.name;
  // Largest self time first; the self times add up to what the top-level calls took.
  for (std::size_t i = 1; i < ops.size(); ++i) EXPECT_GE(ops[i - 1].self_ms, ops[i].self_ms);
  double self = 0;
  for (const auto& o : ops) self += o.self_ms;
  EXPECT_NEAR(self, linear->total_ms + relu->total_ms, 1e-6 * self);
  const auto json = op_profile_json(ops, 2);
  ASSERT_EQ(json.size(), 2u);
  EXPECT_EQ(json[0]["name"], ops[0].name);
  EXPECT_NEAR(json[0]["self_share"].get<double>(), ops[0].self_ms / self, 1e-12);
  // Nothing is recorded once the profile is over, and profiles do not nest.
  EXPECT_TRUE(profile_ops([] {}, torch::kCPU).empty());
  EXPECT_THROW(profile_ops([] { profile_ops([] {}, torch::kCPU); }, torch::kCPU), std::logic_error);
}

// The inference kernels of our own are operators of their own to the profile, on the GPU's clock,
// where the ATen operators they replace were: a decoding step's GEMV, norm and SiLU × up, and the
// masked-LM head's argmax.
TEST(OpProfile, TheInferenceKernelsAreOperatorsOfTheirOwn) {
  if (!torch::cuda::is_available() || !models::fused::kernels_built())
    GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  torch::NoGradGuard no_grad;
  const auto o = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16);
  const auto x = torch::randn({1, 256}, o), w = torch::randn({512, 256}, o), norm = torch::ones({256}, o);
  const auto logits = torch::randn({70, 1000}, o), gate_up = torch::randn({1, 512}, o);
  const auto ops = profile_ops(
      [&] {
        for (int i = 0; i < 2; ++i) {
          models::fused::linear(models::fused::add_rms_norm(x, x, norm, 1e-5, true).second, w, true);
          models::fused::silu_mul(gate_up, true);
          models::fused::linear_silu_mul(x, torch::cat({w, w}), true);
          models::fused::argmax(logits, true);
        }
      },
      torch::kCUDA);
  for (const std::string name :
       {"xpuperf::gemv", "xpuperf::add_rms_norm", "xpuperf::silu_mul", "xpuperf::gemv_silu_mul", "xpuperf::argmax"}) {
    const auto op = std::find_if(ops.begin(), ops.end(), [&](const OpTime& t) { return t.name == name; });
    ASSERT_NE(op, ops.end()) << name << " is not in\n" << op_profile_table(ops, 20);
    EXPECT_EQ(op->calls, 2) << name;
    EXPECT_GT(op->self_ms, 0) << name;
  }
  EXPECT_EQ(std::count_if(ops.begin(), ops.end(), [](const OpTime& t) { return t.name == "aten::argmax"; }), 0);
}

}  // namespace
}  // namespace xpuperf::infer
