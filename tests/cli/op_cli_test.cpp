// `xpuperf op` as a user runs it, on this machine's CPU with the real configs of cases/operation:
// the table, the JSON rows, and a clear error for each bad input.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "test_util.h"

namespace xpuperf {
namespace {

const std::string kRoot = XPUPERF_SOURCE_DIR;

TEST(OpCli, AnOperatorCaseRunsItsSmokeShapesAndWritesItsRows) {
  test::TempDir dir;
  const Result r = xpuperf({"--root", kRoot, "op", "--case", "layer_norm", "--smoke", "--dtype", "fp32", "--json",
                            dir.path() + "/rows.json"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "| layer_norm | 8×32 | fp32 | aten |")) << r.output;
  EXPECT_TRUE(has(r.output, "yes (with gradients) | yes |")) << r.output;
  const auto rows = nlohmann::json::parse(test::read_file(dir.path() + "/rows.json"));
  ASSERT_EQ(rows["rows"].size(), 1u);
  EXPECT_EQ(rows["rows"][0]["shape"], nlohmann::json::array({8, 32}));
  EXPECT_EQ(rows["rows"][0]["flops"], 8.0 * 8 * 32);
  EXPECT_TRUE(rows["rows"][0]["accurate"].get<bool>());
}

TEST(OpCli, TimingAloneSaysTheRowIsNotChecked) {
  const Result r = xpuperf(
      {"--root", kRoot, "op", "--case", "softmax", "--smoke", "--dtype", "fp32", "--set", "check_accuracy=false"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "| not checked | yes |")) << r.output;
}

TEST(OpCli, ListsTheOperatorsWithTheirFormulas) {
  const Result r = xpuperf({"--root", kRoot, "op", "--list"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "| `mm` | M × N × K | 2·M·N·K | (M·K + K·N + M·N)·e | yes |")) << r.output;
}

TEST(OpCli, BadInputIsAClearError) {
  Result r = xpuperf({"--root", kRoot, "op", "--case", "matmul"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "unknown operator case 'matmul'")) << r.output;
  r = xpuperf({"--root", kRoot, "op", "--case", "softmx"});
  EXPECT_TRUE(has(r.output, "did you mean 'softmax'?")) << r.output;
  r = xpuperf({"--root", kRoot, "op", "--case", "mm", "--shape", "64x48"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.output, "--shape: mm takes 3 sizes (M × N × K), got 2")) << r.output;
  r = xpuperf({"--root", kRoot, "op", "--case", "mm", "--shape", "64x4a8x2"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "--shape '64x4a8x2': write the sizes as positive integers joined by x")) << r.output;
  r = xpuperf({"--root", kRoot, "op", "--case", "mm", "--smoke", "--dtype", "int4"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.output, "dtype 'int4' is not one of fp32, bf16, fp16, fp64")) << r.output;
  r = xpuperf({"--root", kRoot, "op", "--case", "group_norm", "--shape", "2x6x4x4", "--dtype", "fp32"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.output, "group_norm's channels C (6) must divide by its groups (4)")) << r.output;
}

}  // namespace
}  // namespace xpuperf
