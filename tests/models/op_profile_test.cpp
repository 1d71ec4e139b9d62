// The per-operator profile of an inference pass (infer/op_profile.h): counts, inclusive and self
// times on the CPU's clock.

#include "xpuperf/infer/op_profile.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

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

}  // namespace
}  // namespace xpuperf::infer
