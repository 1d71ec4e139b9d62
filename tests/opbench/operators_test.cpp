// The operator benchmarks' catalogue and measurement on the CPU: every operator runs its smoke
// shapes accurately against float64, the configs and the README agree with the catalogue, and an
// operator that is wrong is caught.

#include "xpuperf/opbench/operators.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "quick_options.h"
#include "test_util.h"
#include "xpuperf/core/config.h"
#include "xpuperf/opbench/op_case.h"
#include "xpuperf/opbench/op_measure.h"

namespace xpuperf::opbench {
namespace {

const std::string kCases = std::string(XPUPERF_SOURCE_DIR) + "/cases/operation";

std::vector<std::vector<std::int64_t>> smoke_shapes(const std::string& op) {
  Diagnostics diags;
  const auto config = load_config_file(kCases + "/" + op + "/config.yaml", diags);
  EXPECT_TRUE(config) << diags.format();
  std::vector<std::vector<std::int64_t>> shapes;
  if (config)
    for (const auto& item : config->at("smoke_shapes").value) shapes.push_back(item.as<std::vector<std::int64_t>>());
  return shapes;
}

// Each operator has a case folder, and each case folder an operator, whose shapes have its sizes.
TEST(OperatorCatalogue, EachOperatorHasACaseWhoseShapesFitIt) {
  std::set<std::string> folders;
  for (const auto& e : std::filesystem::directory_iterator(kCases))
    if (e.is_directory()) folders.insert(e.path().filename().string());
  auto names = operator_names();
  names.push_back(kCensusCase);                                 // a case's step explained, not a catalogue operator
  for (const auto& c : collective_names()) names.push_back(c);  // over several ranks, collective_case.cpp
  EXPECT_EQ(folders, std::set<std::string>(names.begin(), names.end()));
  for (const auto& spec : operator_specs()) {
    Diagnostics diags;
    const auto config = load_config_file(kCases + "/" + spec.name + "/config.yaml", diags);
    ASSERT_TRUE(config) << diags.format();
    for (const char* key : {"shapes", "smoke_shapes"})
      for (const auto& shape : config->at(key).value)
        EXPECT_EQ(shape.size(), spec.size_names.size()) << spec.name << " " << key;
  }
}

TEST(OperatorCatalogue, TheReadmeTableIsTheCatalogue) {
  const std::string readme = test::read_file(kCases + "/README.md");
  const std::string begin = "<!-- operator table: xpuperf op --list --markdown -->\n";
  const auto from = readme.find(begin), to = readme.find("<!-- end of operator table -->");
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  EXPECT_EQ(readme.substr(from + begin.size(), to - from - begin.size()), operator_table_markdown())
      << "paste `xpuperf op --list --markdown` between the markers of cases/operation/README.md";
}

// Every operator at its smoke shapes, in float32 on the CPU (int32 for the bitwise ones): accurate
// (output and gradients; a random operator by its own check), deterministic unless random, timed,
// and its throughput from its formulas.
TEST(OperatorMeasure, EveryOperatorRunsAccuratelyOnTheCpu) {
  for (const auto& spec : operator_specs())
    for (const auto& shape : smoke_shapes(spec.name)) {
      const auto dtype = spec.integer ? torch::kInt : torch::kFloat32;
      const OperatorRow row = measure_operator(spec, shape, dtype, torch::kCPU, quick_options());
      EXPECT_TRUE(row.accurate) << spec.name << ": worst/tolerance " << row.error.worst_over_tolerance << ", gradients "
                                << row.gradient_error.worst_over_tolerance << " " << row.check_problem;
      EXPECT_EQ(row.has_gradients, spec.has_backward) << spec.name;
      EXPECT_EQ(row.deterministic, !spec.random) << spec.name;
      EXPECT_EQ(row.samples, 3) << spec.name;
      EXPECT_FALSE(row.device_timed) << "the CPU has no timeline: the host clock";
      EXPECT_GT(row.median_ms, 0) << spec.name;
      EXPECT_LE(row.p10_ms, row.median_ms);
      EXPECT_LE(row.median_ms, row.p90_ms);
      EXPECT_GT(row.flops, 0) << spec.name;
      EXPECT_GT(row.bytes, 0) << spec.name;
      EXPECT_NEAR(row.tflops, row.flops / (row.median_ms * 1e-3) / 1e12, 1e-12);
    }
}

// Dropout is checked by what it may give: a dropout that keeps everything fails.
TEST(OperatorMeasure, ARandomOperatorsOwnCheckCatchesAWrongOne) {
  OperatorSpec wrong = *find_operator("dropout");
  wrong.run = [](const std::vector<torch::Tensor>& in, const std::vector<std::int64_t>&) { return in[0] * 2; };
  const OperatorRow row = measure_operator(wrong, {4096}, torch::kFloat32, torch::kCPU, quick_options());
  EXPECT_FALSE(row.accurate);
  EXPECT_NE(row.check_problem.find("0 of 4096 elements dropped, not about half"), std::string::npos)
      << row.check_problem;
}

TEST(OperatorMeasure, BfloatErrorsAreBfloatsAndMmsFormulaIsTwoMnk) {
  const OperatorRow row =
      measure_operator(*find_operator("mm"), {64, 48, 32}, torch::kBFloat16, torch::kCPU, quick_options());
  EXPECT_EQ(row.flops, 2.0 * 64 * 48 * 32);
  EXPECT_EQ(row.bytes, (64.0 * 32 + 32 * 48 + 64 * 48) * 2);
  EXPECT_EQ(row.dtype, "bf16");
  EXPECT_DOUBLE_EQ(row.rtol, 1.6e-2);
  EXPECT_TRUE(row.accurate) << row.error.worst_over_tolerance;
  EXPECT_GT(row.error.max_rel, 1e-4) << "bf16's output rounding shows";
  EXPECT_LT(row.error.max_rel, 0.1);
}

// An operator one part in a hundred off is not accurate in float32: the check can fail.
TEST(OperatorMeasure, AWrongOperatorIsCaught) {
  OperatorSpec wrong = *find_operator("mm");
  wrong.run = [](const std::vector<torch::Tensor>& in, const std::vector<std::int64_t>&) {
    const torch::Tensor out = torch::mm(in[0], in[1]);
    return out.scalar_type() == torch::kFloat64 ? out : out * 1.01;
  };
  const OperatorRow row = measure_operator(wrong, {16, 16, 16}, torch::kFloat32, torch::kCPU, quick_options());
  EXPECT_FALSE(row.accurate);
  EXPECT_GT(row.error.worst_over_tolerance, 2);
  EXPECT_GT(row.error.worst_over_default, 100);
  EXPECT_DOUBLE_EQ(row.atol, 1e-4 * 16) << "1e-4 for each of the K = 16 terms an element sums";
}

// Blocks of calls are timed until min_seconds have passed: the device's clocks under load.
TEST(OperatorMeasure, BlocksOfCallsAreTimedForTheMinimumTime) {
  MeasureOptions o = quick_options();
  o.samples = 2;
  o.min_seconds = 0.05;
  const auto started = std::chrono::steady_clock::now();
  const OperatorRow row = measure_operator(*find_operator("add"), {64}, torch::kFloat32, torch::kCPU, o);
  EXPECT_GE(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 0.05);
  EXPECT_GT(row.samples, 2);
  EXPECT_EQ(row.samples % 2, 0) << "whole blocks";
}

TEST(OperatorMeasure, ADtypeIsNamedAmongTheChoices) {
  EXPECT_EQ(parse_dtype("bf16"), torch::kBFloat16);
  try {
    parse_dtype("int4");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "dtype 'int4' is not one of fp32, bf16, fp16, fp64, int32, int16");
  }
}

}  // namespace
}  // namespace xpuperf::opbench
