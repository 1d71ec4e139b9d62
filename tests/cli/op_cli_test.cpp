// `xpuperf op` as a user runs it, on this machine's CPU with the real configs of cases/operation:
// the table, the JSON rows, and a clear error for each bad input.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "test_util.h"

namespace xpuperf {
namespace {

const std::string kRoot = XPUPERF_SOURCE_DIR;

// `xpuperf train --case NAME` on this machine's CPU with each of `sets` (key=value) set: a run whose
// census `xpuperf op --census` replays.
Result train_on_cpu(const std::string& name, const std::vector<std::string>& sets) {
  std::vector<std::string> args = {"--root", kRoot, "train", "--case", name, "--vendor", "cpu", "--hardware", "CPU"};
  for (const auto& set : sets) {
    args.push_back("--set");
    args.push_back(set);
  }
  return xpuperf(args);
}

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
  // The CPU's work is no device kernel for the profiler: the row says so rather than list none.
  EXPECT_TRUE(rows["rows"][0]["kernels"].empty());
  EXPECT_FALSE(rows["rows"][0]["kernels_note"].get<std::string>().empty());
}

// The bitwise operators run in the integer dtypes; dropout is checked by what it may give and is
// not deterministic by design.
TEST(OpCli, IntegerAndRandomOperatorsRunAndSayWhatTheyAre) {
  Result r = xpuperf({"--root", kRoot, "op", "--case", "bitwise_and", "--smoke"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "| bitwise_and | 64 | int32 | aten |")) << r.output;
  EXPECT_TRUE(has(r.output, "| bitwise_and | 64 | int16 | aten |")) << r.output;
  r = xpuperf({"--root", kRoot, "op", "--case", "dropout", "--smoke", "--dtype", "bf16"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "| yes | no |")) << r.output;
}

// The GEMM base cases' inputs, for a row compared with their roof like for like.
TEST(OpCli, InputsCanBeTheBaseCasesLevels) {
  test::TempDir dir;
  Result r = xpuperf({"--root", kRoot, "op", "--case", "mm", "--smoke", "--dtype", "bf16", "--set",
                      "input_values=levels", "--json", dir.path() + "/rows.json"});
  ASSERT_EQ(r.code, 0) << r.output;
  const auto row = nlohmann::json::parse(test::read_file(dir.path() + "/rows.json"))["rows"][0];
  EXPECT_EQ(row["input_values"], "levels");
  EXPECT_TRUE(row["accurate"].get<bool>());
  r = xpuperf({"--root", kRoot, "op", "--case", "mm", "--smoke", "--set", "input_values=uniform"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.output, "input_values must be normal or levels, got 'uniform'")) << r.output;
}

TEST(OpCli, TimingAloneSaysTheRowIsNotChecked) {
  const Result r = xpuperf(
      {"--root", kRoot, "op", "--case", "softmax", "--smoke", "--dtype", "fp32", "--set", "check_accuracy=false"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "| not checked | yes |")) << r.output;
}

// Every call of a tiny GPT-2's step replays on the CPU: attention, xpuperf's fused norm, the
// embedding's and GELU's backward, the optimizer's foreach operators.
TEST(OpCli, EveryCallOfAGpt2StepReplays) {
  test::TempDir dir;
  Result r = train_on_cpu(
      "gpt2", {"synthetic_data=true", "synthetic_tokens=65536", "vocab_size=512", "n_layer=2", "n_embd=64", "n_head=4",
               "seq_length=64", "train_batch_size=4", "max_steps=5", "timing_skip_steps=3", "census_steps=2"});
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string log = dir.write("gpt2.log", r.output);
  r = xpuperf({"--root", kRoot, "op", "--census", log, "--smoke", "--json", dir.path() + "/rows.json"});
  ASSERT_EQ(r.code, 0) << r.output;  // 0: no call failed to replay
  for (const char* op : {"| xpuperf::add_layer_norm |", "| aten::embedding_backward |", "| aten::gelu_backward |",
                         "| aten::_foreach_addcdiv_.Scalar |", "| xpuperf::cross_entropy |"})
    EXPECT_TRUE(has(r.output, op)) << op << "\n" << r.output;
  const auto j = nlohmann::json::parse(test::read_file(dir.path() + "/rows.json"));
  EXPECT_TRUE(j["failed_rows"].empty()) << j["failed_rows"].dump();
  EXPECT_GT(j["explained"]["replayed_calls_per_step"].get<double>(), 300);
}

// The device-graph mode where the device has none: said, not left out, and a bad count is an error.
TEST(OpCli, TheGraphModeSaysWhenTheDeviceHasNoGraphs) {
  Result r = xpuperf({"--root", kRoot, "op", "--case", "mm", "--smoke", "--dtype", "fp32", "--set", "graph_calls=4"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "graph replay of mm 64×48×32 fp32 aten: no device graphs on cpu")) << r.output;
  EXPECT_TRUE(has(r.output, "\"graph_note\":\"no device graphs on cpu")) << r.output;
  r = xpuperf({"--root", kRoot, "op", "--case", "mm", "--smoke", "--set", "graph_calls=-1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.output, "graph_calls 0 or more")) << r.output;
}

TEST(OpCli, ListsTheOperatorsWithTheirFormulas) {
  const Result r = xpuperf({"--root", kRoot, "op", "--list"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "| `mm` | M × N × K | 2·M·N·K | (M·K + K·N + M·N)·e | yes | floating | aten |"))
      << r.output;
  EXPECT_TRUE(has(r.output, "| `bitwise_and` | n | n | 3·n·e | no | integer | aten |")) << r.output;
  EXPECT_TRUE(has(r.output,
                  "| `layer_norm` | rows × cols | 8·rows·cols | (2·rows·cols + 2·cols)·e | yes | floating | "
                  "aten, xpuperf |"))
      << r.output;
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
  EXPECT_TRUE(has(r.output, "dtype 'int4' is not one of fp32, bf16, fp16, fp64, int32, int16")) << r.output;
  r = xpuperf({"--root", kRoot, "op", "--case", "bitwise_and", "--smoke", "--dtype", "fp32"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.output, "bitwise_and takes integer dtypes (int32, int16), got fp32")) << r.output;
  r = xpuperf({"--root", kRoot, "op", "--case", "softmax", "--smoke", "--dtype", "int32"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.output, "softmax takes floating dtypes (fp32, bf16, fp16, fp64), got int32")) << r.output;
  r = xpuperf({"--root", kRoot, "op", "--case", "group_norm", "--shape", "2x6x4x4", "--dtype", "fp32"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.output, "group_norm's channels C (6) must divide by its groups (4)")) << r.output;
}

// The sim vendor registers its own kernels for two of xpuperf's operators (vendors/sim/plugin/
// sim_ops.cpp): each is timed and checked beside ATen's, with its speed-up; the CPU registers none.
TEST(OpCli, AVendorsKernelIsTimedBesideAtensWithItsSpeedup) {
  test::TempDir dir;
  const Result sim = xpuperf({"--root", kRoot, "op", "--case", "rms_norm", "--vendor", "sim", "--hardware", "SIM",
                              "--smoke", "--dtype", "fp32", "--json", dir.path() + "/rows.json"});
  ASSERT_EQ(sim.code, 0) << sim.output;
  EXPECT_TRUE(has(sim.output, "| rms_norm | 8×32 | fp32 | aten |")) << sim.output;
  EXPECT_TRUE(has(sim.output, "| rms_norm | 8×32 | fp32 | xpuperf |")) << sim.output;
  const auto rows = nlohmann::json::parse(test::read_file(dir.path() + "/rows.json"))["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["device"], "sim:0");
  EXPECT_FALSE(rows[0].contains("speedup_vs_aten"));
  EXPECT_GT(rows[1]["speedup_vs_aten"].get<double>(), 0.0);
  EXPECT_NEAR(rows[1]["speedup_vs_aten"].get<double>(),
              rows[0]["median_ms"].get<double>() / rows[1]["median_ms"].get<double>(), 1e-9);
  // Its kernel is a forward kernel: its gradients would be the composite's, so they are not claimed.
  EXPECT_TRUE(rows[0].contains("gradient_error"));
  EXPECT_FALSE(rows[1].contains("gradient_error"));
  EXPECT_TRUE(rows[1]["accurate"].get<bool>());
  const Result cpu = xpuperf({"--root", kRoot, "op", "--case", "silu_and_mul", "--smoke", "--dtype", "fp32"});
  ASSERT_EQ(cpu.code, 0) << cpu.output;
  EXPECT_TRUE(has(cpu.output, "not measured: xpuperf: no kernel of xpuperf::silu_mul is registered for cpu"))
      << cpu.output;
  const Result bad =
      xpuperf({"--root", kRoot, "op", "--case", "argmax", "--smoke", "--set", "implementations=[aten, flaggems]"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(has(bad.output, "argmax has no implementation 'flaggems' (it has aten, xpuperf)")) << bad.output;
}

// A plan's operation section: rounds of an operator case beside the base cases that measure this
// machine's roof, and the report's rows, roofline, CSV and comparison built from them.
TEST(OpCli, APlanPlacesItsOperatorRowsOnTheRoofItsBaseCasesMeasured) {
  test::TempDir dir;
  const std::string plan = dir.write(
      "plan.yaml", "vendor: cpu\nlog_dir: " + dir.path() +
                       "/results\nmonitor_period: 0.2\nbase:\n"
                       "  \"computation-FP32:CPU:1:1:1\": {cpu_size: 256, repeats: 2, seconds: 0.1}\n"
                       "  \"main_memory-bandwidth:CPU:1:1:1\": {cpu_array_mib: 16, repeats: 2}\n"
                       "operation:\n"
                       "  \"softmax:CPU:2\": {shapes: [[64, 128]], dtypes: [fp32], samples: 5, min_seconds: 0.0}\n");
  const Result r = xpuperf({"--root", kRoot, "run", plan}, dir.path(), {}, 600);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "softmax:CPU:2 round 2/2 ... ok: 1 row, 1 accurate")) << r.output;
  const std::string run = run_folder_in(dir.path() + "/results");
  const auto summary = nlohmann::json::parse(test::read_file(run + "/summary.json"));
  ASSERT_EQ(summary["cases"].size(), 3u);
  const auto& op = summary["cases"][2];
  EXPECT_EQ(op["case"], "softmax:CPU:2");
  EXPECT_EQ(op["family"], "operation");
  ASSERT_EQ(op["rounds"].size(), 2u);
  EXPECT_EQ(op["rounds"][1]["operators"][0]["shape"], nlohmann::json::array({64, 128}));
  const std::string md = test::read_file(run + "/summary.md");
  EXPECT_TRUE(has(md, "| softmax:CPU:2 | softmax | 64×128 | fp32 | aten | ")) << md;
  EXPECT_TRUE(has(md, "Measured roof: measured: computation-FP32, main_memory-bandwidth of run")) << md;
  const std::string csv = test::read_file(run + "/operators.csv");
  EXPECT_TRUE(has(csv, "\nsoftmax:CPU:2,1,softmax,64×128,fp32,aten,")) << csv;
  EXPECT_TRUE(has(csv, "\nsoftmax:CPU:2,2,softmax,64×128,fp32,aten,")) << csv;
  const std::string html = test::read_file(run + "/report.html");
  EXPECT_TRUE(has(html, "<h2>Operators</h2>")) << html;
  EXPECT_TRUE(has(html, "Roofline: each operator row")) << html;
  // The tables again from summary.json alone (rank logs pruned), the same.
  ASSERT_EQ(xpuperf({"--root", kRoot, "report", run, "--from-json"}).code, 0);
  EXPECT_EQ(test::read_file(run + "/summary.md"), md);
  EXPECT_EQ(test::read_file(run + "/operators.csv"), csv);
  // The same run against itself: each row compared, no change.
  const Result cmp = xpuperf({"--root", kRoot, "compare", run, run});
  EXPECT_TRUE(has(cmp.output, "softmax 64×128 fp32 aten ms")) << cmp.output;
  // A standalone row placed on the run's measured roof.
  const Result roofed =
      xpuperf({"--root", kRoot, "op", "--case", "softmax", "--smoke", "--dtype", "fp32", "--roof", run});
  ASSERT_EQ(roofed.code, 0) << roofed.output;
  EXPECT_TRUE(has(roofed.output, "measured roof: measured: computation-FP32, main_memory-bandwidth")) << roofed.output;
  EXPECT_TRUE(has(roofed.output, "[PerfLog] {\"event\":\"FINISHED\"")) << roofed.output;
}

// A collective over two ranks on this host (Gloo), reported like nccl-tests, and in a plan by the key
// that names its ranks.
TEST(OpCli, ACollectiveRunsOverItsRanksWithItsBusBandwidth) {
  test::TempDir dir;
  Result r = xpuperf({"--root", kRoot, "op", "--case", "all_gather", "--nproc", "2", "--smoke", "--dtype", "fp32",
                      "--json", dir.path() + "/rows.json"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "| all_gather | 4096 | 0.02 | fp32 | 2 | c10d gloo | not said by gloo |")) << r.output;
  const auto rows = nlohmann::json::parse(test::read_file(dir.path() + "/rows.json"))["rows"];
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["ranks"], 2);
  EXPECT_EQ(rows[0]["bytes"], 4096.0 * 4);
  EXPECT_EQ(rows[0]["bus_factor"], 0.5);
  EXPECT_NEAR(rows[0]["bus_gb_per_s"].get<double>(), rows[0]["gb_per_s"].get<double>() / 2, 1e-12);
  EXPECT_TRUE(rows[0]["accurate"].get<bool>());
  EXPECT_TRUE(rows[0]["deterministic"].get<bool>());
  EXPECT_EQ(rows[0]["samples"], 5);

  r = xpuperf({"--root", kRoot, "op", "--case", "all_reduce", "--smoke", "--dtype", "fp32"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.output,
                  "all_reduce is a collective: run it over 2 ranks or more (xpuperf op --case all_reduce "
                  "--nproc 2"))
      << r.output;
  r = xpuperf({"--root", kRoot, "op", "--case", "all_reduce", "--nproc", "2", "--shape", "64x64"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.output, "--shape: all_reduce takes 1 size (the elements of its larger buffer), got 2")) << r.output;

  const std::string plan =
      dir.write("plan.yaml", "vendor: cpu\nlog_dir: " + dir.path() +
                                 "/results\noperation:\n"
                                 "  \"all_reduce:CPU:1:2:1\": {shapes: [[4096]], dtypes: [fp32], samples: 5}\n");
  r = xpuperf({"--root", kRoot, "run", plan}, dir.path(), {}, 600);
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string run = run_folder_in(dir.path() + "/results");
  const std::string md = test::read_file(run + "/summary.md");
  EXPECT_TRUE(has(md, "| all_reduce:CPU:1:2:1 | all_reduce | 4096 | fp32 | c10d gloo (not said by gloo) | ")) << md;
  EXPECT_TRUE(has(md, " (bus ")) << md;
  EXPECT_TRUE(has(test::read_file(run + "/operators.csv"), ",2,")) << "the ranks column";
}

TEST(OpCli, ARoofFromARunWithoutBaseCasesIsAClearError) {
  test::TempDir dir;
  Result r = xpuperf({"--root", kRoot, "op", "--case", "softmax", "--smoke", "--roof", dir.path() + "/nothing"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "--roof " + dir.path() + "/nothing: ")) << r.output;
  const std::string plan = dir.write("plan.yaml", "vendor: cpu\nlog_dir: " + dir.path() +
                                                      "/results\noperation:\n  \"softmax:CPU:1\": {shapes: [[4, 8]], "
                                                      "dtypes: [fp32], samples: 2, min_seconds: 0.0}\n");
  ASSERT_EQ(xpuperf({"--root", kRoot, "run", plan}, dir.path(), {}, 300).code, 0);
  const std::string run = run_folder_in(dir.path() + "/results");
  EXPECT_TRUE(has(test::read_file(run + "/summary.md"), "No measured roof: the run has no computation-*"));
  r = xpuperf({"--root", kRoot, "op", "--case", "softmax", "--smoke", "--roof", run});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "the run has no computation-* or main_memory-bandwidth base case that ran ok on CPU"))
      << r.output;
  // An override of a key the case does not define, in a plan, names the line.
  const std::string bad = dir.write("bad.yaml", "vendor: cpu\noperation:\n  \"softmax:CPU:1\": {shapez: [[4, 8]]}\n");
  r = xpuperf({"--root", kRoot, "check", bad});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "'shapez' is not a parameter of this case")) << r.output;
  EXPECT_TRUE(has(r.output, "did you mean 'shapes'?")) << r.output;
}

// A training case's census (census_steps) and `xpuperf op --census` on it: every call replayed, and
// the step explained by them (LeNet-5 on synthetic data, in seconds).
TEST(OpCli, ATrainingCasesStepIsExplainedByItsOperators) {
  test::TempDir dir;
  const std::vector<std::string> lenet5 = {"synthetic_data=true", "max_steps=5", "timing_skip_steps=3"};
  auto with = [&lenet5](const std::string& more) {
    auto sets = lenet5;
    sets.push_back(more);
    return sets;
  };
  Result r = train_on_cpu("lenet5", with("census_steps=2"));
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string log = dir.write("train.log", r.output);

  r = xpuperf({"--root", kRoot, "op", "--census", log, "--smoke", "--json", dir.path() + "/rows.json"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "lenet5:libtorch on cpu: a step explained by its operators")) << r.output;
  EXPECT_TRUE(has(r.output, "| measured step (the mean of the run's 2 timed steps) |")) << r.output;
  EXPECT_TRUE(has(r.output, "| explained | ")) << r.output;
  EXPECT_TRUE(has(r.output, "| explained, warm | ")) << r.output;
  EXPECT_TRUE(has(r.output, "| aten::convolution_backward | cpu:fp32[64,16,10,10]")) << r.output;
  const auto j = nlohmann::json::parse(test::read_file(dir.path() + "/rows.json"));
  EXPECT_GT(j["explained"]["step_ms"].get<double>(), 0);
  EXPECT_GT(j["explained"]["explained_ms"].get<double>(), 0);
  EXPECT_EQ(j["explained"]["top_rows"].size(), 10u);
  ASSERT_FALSE(j["rows"].empty());
  bool conv = false, backward = false;
  for (const auto& row : j["rows"]) {
    EXPECT_GT(row["calls_per_step"].get<double>(), 0) << row.dump();
    conv = conv || (row["op"] == "aten::conv2d" && row["flops_known"].get<bool>() && row["flops"].get<double>() > 0);
    backward = backward || row["backward"].get<bool>();
  }
  EXPECT_TRUE(conv) << "a convolution, with its FLOPs";
  EXPECT_TRUE(backward) << "the backward's calls";

  // The same in a plan: the rows in summary.md's operator table, and the step they explain.
  const std::string plan = dir.write("plan.yaml", "vendor: cpu\nlog_dir: " + dir.path() +
                                                      "/results\noperation:\n  \"census:CPU:1\": {census: " + log +
                                                      ", samples: 3, warmup: 1, min_seconds: 0.0, rotate_mib: 1, "
                                                      "flush_mib: 1}\n");
  r = xpuperf({"--root", kRoot, "run", plan}, dir.path(), {}, 600);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "calls replayed, ")) << r.output;
  EXPECT_TRUE(has(r.output, "% of the step explained")) << r.output;
  const std::string md = test::read_file(run_folder_in(dir.path() + "/results") + "/summary.md");
  EXPECT_TRUE(has(md, "| census:CPU:1 | aten::conv2d | cpu:fp32[64,1,28,28]")) << md;
  EXPECT_TRUE(has(md, "census:CPU:1 (lenet5:libtorch on cpu): Σ calls × isolated time ")) << md;
  EXPECT_TRUE(has(md, " % explained); with warm caches ")) << md;
  EXPECT_TRUE(has(md, " %). The costliest calls")) << md;

  // Bad input: a census that would watch the first step, a file without one, a path that is not.
  r = train_on_cpu("lenet5", with("census_steps=3"));
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(has(r.output, "census_steps 3 needs timing_skip_steps of 4 or more")) << r.output;
  r = xpuperf({"--root", kRoot, "op", "--census", dir.path() + "/rows.json", "--smoke"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.output, "has no operator census (run the case with --set census_steps=N")) << r.output;
  r = xpuperf({"--root", kRoot, "op", "--census", dir.path() + "/missing", "--smoke"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.output, "missing: no such file or folder")) << r.output;
  r = xpuperf({"--root", kRoot, "op", "--census", log, "--case", "mm"});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(has(r.output, "--census goes without --case")) << r.output;
}

}  // namespace
}  // namespace xpuperf
