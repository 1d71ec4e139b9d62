// The base cases' torch-free parts: GEMM inputs and checks, config merge, plan keys, datasheet
// ratios, the power drawn in a measured window.

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "test_util.h"
#include "xpuperf/base/base_runner.h"
#include "xpuperf/base/gemm_check.h"
#include "xpuperf/core/base_config.h"
#include "xpuperf/core/plan.h"
#include "xpuperf/core/vendor_spec.h"
#include "xpuperf/monitor/analysis.h"

namespace xpuperf::base {
namespace {

TEST(GemmCheck, LevelsAreExactEighthsSpreadOverTheRange) {
  std::set<int> seen;
  for (std::uint64_t i = 0; i < 10000; ++i) {
    const int level = gemm_level(i, 1);
    ASSERT_GE(level, -8);
    ASSERT_LE(level, 8);
    seen.insert(level);
  }
  EXPECT_EQ(seen.size(), 17u);
  EXPECT_NE(gemm_level(5, 1), gemm_level(5, 2) + 100);  // deterministic per (index, seed)
  EXPECT_EQ(gemm_level(5, 1), gemm_level(5, 1));
}

TEST(GemmCheck, PrecisionsFromMetricNames) {
  ASSERT_TRUE(gemm_precision("computation-BF16"));
  EXPECT_EQ(gemm_precision("computation-BF16")->datasheet, "peak_tflops.bf16");
  EXPECT_EQ(gemm_precision("computation-INT8")->unit, "TOP/s");
  EXPECT_TRUE(gemm_precision("computation-INT8")->integer);
  EXPECT_FALSE(gemm_precision("computation-FP4"));
  EXPECT_FALSE(gemm_precision("main_memory-bandwidth"));
}

TEST(GemmCheck, CountsWrongElementsAndAllowsOutputRounding) {
  const GemmPrecision& bf16 = *gemm_precision("computation-BF16");
  // a = [8, -4, 2] / 8, b = [8, 8, 8] / 8: exact sum (64 - 32 + 16) / 64 = 0.75.
  const std::vector<std::vector<int>> a = {{8, -4, 2}, {8, -4, 2}, {8, -4, 2}};
  const std::vector<std::vector<int>> b = {{8, 8, 8}, {8, 8, 8}, {8, 8, 8}};
  double worst = 0;
  EXPECT_EQ(check_gemm_samples(bf16, a, b, {0.75, 0.75 * (1 + 1.0 / 256), 0.8}, worst), 1);  // only 0.8 is wrong
  EXPECT_NEAR(worst, 0.05 / 1.75, 1e-12);
  const GemmPrecision& int8 = *gemm_precision("computation-INT8");
  EXPECT_EQ(check_gemm_samples(int8, {{3, -2}}, {{4, 5}}, {2.0}, worst), 0);  // 12 - 10
  EXPECT_EQ(check_gemm_samples(int8, {{3, -2}}, {{4, 5}}, {3.0}, worst), 1);
}

TEST(GemmCheck, SamplePositionsStayInsideAndIncludeTheCorners) {
  const auto positions = gemm_sample_positions(100, 37, 64);
  ASSERT_EQ(positions.size(), 64u);
  EXPECT_EQ(positions[0], (std::pair<std::int64_t, std::int64_t>{0, 0}));
  EXPECT_EQ(positions[1], (std::pair<std::int64_t, std::int64_t>{99, 36}));
  for (const auto& [i, j] : positions) {
    EXPECT_LT(i, 100);
    EXPECT_LT(j, 37);
    EXPECT_GE(i, 0);
    EXPECT_GE(j, 0);
  }
}

TEST(BaseConfig, MergesVendorAndOverridesAndRejectsUnknownKeys) {
  test::TempDir dir;
  dir.write("cases/base/computation-FP32/config.yaml", "cpu_size: 1024\nrepeats: 5\nseconds: 1.0\n");
  dir.write("vendors/acme/base/computation-FP32.yaml", "repeats: 9\n");
  dir.write("vendors/cpu/specs.yaml", "chips: {}\n");
  const Repo repo(dir.path());
  Diagnostics diags;
  Override set{"cpu_size", YAML::Load("256"), {"--set cpu_size=256", 0}};
  auto config = load_base_config(repo, {"computation-FP32", "acme", {set}, {"cli", 0}}, diags);
  ASSERT_TRUE(config) << diags.format();
  EXPECT_EQ(config->get_int("cpu_size"), 256);
  EXPECT_EQ(config->get_int("repeats"), 9);
  EXPECT_NE(config->at("repeats").source.str().find("vendors/acme/base/computation-FP32.yaml:1"), std::string::npos);

  Diagnostics bad;
  Override typo{"repeat", YAML::Load("3"), {"--set repeat=3", 0}};
  EXPECT_FALSE(load_base_config(repo, {"computation-FP32", "cpu", {typo}, {"cli", 0}}, bad));
  EXPECT_NE(bad.format().find("did you mean 'repeats'"), std::string::npos) << bad.format();

  Diagnostics unknown;
  EXPECT_FALSE(load_base_config(repo, {"computation-FP23", "cpu", {}, {"plan.yaml", 4}}, unknown));
  EXPECT_NE(unknown.format().find("plan.yaml:4"), std::string::npos) << unknown.format();
  EXPECT_NE(unknown.format().find("did you mean 'computation-FP32'"), std::string::npos) << unknown.format();
}

TEST(BaseConfig, PlanBaseSectionWithOverrides) {
  Diagnostics diags;
  auto plan = load_plan_text(
      "vendor: cpu\nbase:\n  \"computation-FP32:CPU:1:1:2\": {repeats: 3, sizes: [1, 2]}\n"
      "  \"interconnect-allreduce:CPU:1:2:1\":\n",
      "plan.yaml", diags);
  ASSERT_TRUE(plan) << diags.format();
  ASSERT_EQ(plan->cases.size(), 2u);
  EXPECT_TRUE(is_base_key(plan->cases[0].key));
  EXPECT_EQ(plan->cases[0].key.model, "computation-FP32");
  EXPECT_EQ(plan->cases[0].key.repeat, 2);
  EXPECT_EQ(plan->cases[0].sets, (std::vector<std::string>{"repeats=3", "sizes=[1, 2]"}));
  EXPECT_EQ(plan->cases[1].key.nproc, 2);
  EXPECT_EQ(base_key_text(plan->cases[1].key), "interconnect-allreduce:CPU:1:2:1");
  EXPECT_EQ(plan->cases[1].key.dir_name(), "interconnect-allreduce_base_CPU_1_2_1");

  Diagnostics bad;
  EXPECT_FALSE(load_plan_text("vendor: cpu\nbase:\n  \"computation-FP32\": 3\n", "p.yaml", bad));
  EXPECT_NE(bad.format().find("p.yaml:3"), std::string::npos) << bad.format();
  Diagnostics none;
  EXPECT_FALSE(load_plan_text("vendor: cpu\n", "p.yaml", none));
  EXPECT_NE(none.format().find("'cases' (or 'base', 'inference', 'operation')"), std::string::npos) << none.format();
}

TEST(BaseRunner, DatasheetRatiosFromTheVendorsSpecs) {
  test::TempDir dir;
  dir.write("vendors/acme/specs.yaml",
            "chips:\n  X1:\n    peak_tflops: {bf16: 1000}\n    memory_bandwidth_gbps: 4000\n");
  nlohmann::json figures = {{{"name", "median"}, {"value", 770.0}, {"datasheet", "peak_tflops.bf16"}},
                            {{"name", "copy"}, {"value", 3000.0}, {"datasheet", "memory_bandwidth_gbps"}},
                            {{"name", "p2p"}, {"value", 1.0}, {"datasheet", "interconnect.unidirectional_gbps"}},
                            {{"name", "latency"}, {"value", 2.0}, {"datasheet", ""}}};
  add_datasheet(Repo(dir.path()), "acme", "X1", figures);
  EXPECT_DOUBLE_EQ(figures[0]["datasheet_value"], 1000.0);
  EXPECT_DOUBLE_EQ(figures[0]["ratio"], 0.77);
  EXPECT_DOUBLE_EQ(figures[1]["ratio"], 0.75);
  EXPECT_FALSE(figures[2].contains("ratio"));
  EXPECT_FALSE(figures[3].contains("ratio"));
  const auto spec = [](const std::string& yaml, const std::string& vendor) {
    return parse_vendor_spec(yaml, vendor, "vendors/" + vendor + "/vendor.yaml");
  };
  VendorSpec undeclared;
  undeclared.vendor = "acme";
  undeclared.declared = false;
  EXPECT_EQ(resolve_backend("auto", "computation-FP32", spec("device_type: cpu\n", "cpu")), "cpu");
  EXPECT_EQ(resolve_backend("auto", "computation-FP32", spec("device_type: cuda\n", "nvidia")), "cuda");
  EXPECT_EQ(resolve_backend("cpu", "computation-FP32", spec("device_type: cuda\n", "nvidia")), "cpu");
  EXPECT_EQ(resolve_backend("auto", "computation-FP32", undeclared), "cuda");
  // A plug-in's device without an implementation of its own for the metric: PyTorch's primitives.
  EXPECT_EQ(resolve_backend("auto", "computation-FP32",
                            spec("device_type: privateuse1\ndevice_name: npu\nplugin: x\n", "acme")),
            "torch");
}

TEST(BaseRunner, MeanPowerInTheMeasuredWindowOfTheUsedDevices) {
  test::TempDir dir;
  std::string csv = "time,node,device,metric,value\n";
  for (int t = 0; t <= 20; ++t) {
    const std::string ts = std::to_string(1000 + t);
    csv += ts + ",n0,gpu0,power_w," + std::to_string(t >= 5 && t <= 10 ? 600 : 100) + "\n";
    csv += ts + ",n0,gpu1,power_w,80\n" + ts + ",n0,package0,power_w,50\n";
  }
  const std::string path = dir.write("monitor.csv", csv);
  EXPECT_DOUBLE_EQ(monitor::mean_power_in_window({path}, 1005, 1010, monitor::accelerators_of_round(1)), 600.0);
  EXPECT_DOUBLE_EQ(monitor::mean_power_in_window({path}, 1005, 1010, {}), 680.0);
  // A window shorter than the sampling period, between two samples: the neighbours count.
  EXPECT_DOUBLE_EQ(monitor::mean_power_in_window({path}, 1007.2, 1007.5, monitor::accelerators_of_round(1)), 600.0);
  // No accelerator: the CPU packages.
  std::string cpu = "time,node,device,metric,value\n1000,n0,package0,power_w,40\n1001,n0,package0,power_w,60\n";
  EXPECT_DOUBLE_EQ(monitor::mean_power_in_window({dir.write("cpu.csv", cpu)}, 1000, 1001), 50.0);
}

}  // namespace
}  // namespace xpuperf::base
