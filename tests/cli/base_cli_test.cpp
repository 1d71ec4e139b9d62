// `xpuperf base` and base cases in a plan, as a user runs them, on this machine's CPU with the
// real configs of cases/base: figures and checks in the PerfLog, the exit codes, and the result
// tree and summary of `xpuperf run`.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_util.h"
#include "xpuperf/core/perflog.h"

namespace xpuperf {
namespace {

using nlohmann::json;

const std::string kRoot = XPUPERF_SOURCE_DIR;

std::optional<json> finished_of(const std::string& output) {
  std::istringstream in(output);
  for (const auto& e : parse_perflog(in).events)
    if (e.event == perflog_event::kFinished) return e.value;
  return std::nullopt;
}

TEST(BaseCli, Fp32GemmIsMeasuredAndChecked) {
  const Result r = xpuperf({"--root", kRoot, "base", "computation-FP32", "--set", "cpu_size=256", "--set", "repeats=2",
                            "--set", "seconds=0.1"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "| median |")) << r.output;
  const auto v = finished_of(r.output);
  ASSERT_TRUE(v) << r.output;
  EXPECT_EQ((*v)["base"], "computation-FP32");
  EXPECT_TRUE((*v)["correct"].get<bool>());
  EXPECT_TRUE(has((*v)["check"].get<std::string>(), "0 wrong of 64")) << v->dump();
  EXPECT_EQ((*v)["figures"][0]["unit"], "TFLOP/s");
  EXPECT_GT((*v)["figures"][0]["value"].get<double>(), 0.0);
  EXPECT_EQ((*v)["details"]["m"], 256);
}

TEST(BaseCli, MemoryBandwidthAndCapacity) {
  const Result bw =
      xpuperf({"--root", kRoot, "base", "main_memory-bandwidth", "--set", "cpu_array_mib=16", "--set", "repeats=3"});
  ASSERT_EQ(bw.code, 0) << bw.output;
  const auto v = finished_of(bw.output);
  ASSERT_TRUE(v);
  std::vector<std::string> names;
  for (const auto& f : (*v)["figures"]) names.push_back(f["name"]);
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 4),
            (std::vector<std::string>{"read", "write", "copy", "triad"}));
  const Result cap = xpuperf({"--root", kRoot, "base", "main_memory-capacity", "--set", "cpu_limit_gib=0.25"});
  ASSERT_EQ(cap.code, 0) << cap.output;
  EXPECT_DOUBLE_EQ((*finished_of(cap.output))["figures"][0]["value"].get<double>(), 0.25);
}

TEST(BaseCli, AllReduceOverTwoLocalRanks) {
  const Result r = xpuperf({"--root", kRoot, "base", "interconnect-allreduce", "--nproc", "2", "--set",
                            "cpu_max_bytes=1048576", "--set", "cpu_iterations=2"},
                           kRoot, {}, 600);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto v = finished_of(r.output);
  ASSERT_TRUE(v) << r.output;
  EXPECT_EQ((*v)["world_size"], 2);
  EXPECT_TRUE(has((*v)["check"].get<std::string>(), "0 wrong elements over 5 sizes")) << v->dump();
  EXPECT_DOUBLE_EQ((*v)["details"]["busbw_factor"].get<double>(), 1.0);  // 2(n-1)/n at n = 2
  for (const auto& row : (*v)["details"]["sweep"])
    EXPECT_NEAR(row["busbw_gbps"].get<double>(), row["algbw_gbps"].get<double>(), 1e-9);
}

TEST(BaseCli, ErrorsSayWhatToDo) {
  const Result typo = xpuperf({"--root", kRoot, "base", "computation-FP33"});
  EXPECT_EQ(typo.code, 1);
  EXPECT_TRUE(has(typo.output, "did you mean 'computation-FP32'")) << typo.output;
  const Result key = xpuperf({"--root", kRoot, "base", "computation-FP32", "--set", "size=1"});
  EXPECT_EQ(key.code, 1);
  EXPECT_TRUE(has(key.output, "'size' is not a parameter")) << key.output;
  const Result one_rank = xpuperf({"--root", kRoot, "base", "interconnect-alltoall"});
  EXPECT_EQ(one_rank.code, 3);
  EXPECT_TRUE(has(one_rank.output, "needs at least 2 ranks")) << one_rank.output;
  const Result fp8 = xpuperf({"--root", kRoot, "base", "computation-FP8"});
  EXPECT_EQ(fp8.code, 3);
  EXPECT_TRUE(has(fp8.output, "no cpu implementation")) << fp8.output;
  const Result list = xpuperf({"--root", kRoot, "base", "--list"});
  EXPECT_EQ(list.code, 0);
  EXPECT_TRUE(has(list.output, "| computation-FP8 |")) << list.output;
}

TEST(BaseCli, PlanRunsBaseCasesIntoTheResultTreeAndSummary) {
  test::TempDir dir;
  const std::string plan =
      dir.write("plan.yaml", "vendor: cpu\nlog_dir: " + dir.path() +
                                 "/results\nmonitor_period: 0.2\nbase:\n"
                                 "  \"computation-FP32:CPU:1:1:2\": {cpu_size: 256, repeats: 2, seconds: 0.1}\n"
                                 "  \"interconnect-allgather:CPU:1:2:1\": {cpu_max_bytes: 262144, cpu_iterations: 2}\n"
                                 "  \"interconnect-reducescatter:CPU:1:2:1\":\n");
  const Result r = xpuperf({"--root", kRoot, "run", plan}, dir.path(), {}, 600);
  // reducescatter cannot run on Gloo: its round fails, the others are recorded.
  EXPECT_TRUE(has(r.output, "computation-FP32:CPU:1:1:2 round 2/2 ... ok: median")) << r.output;
  EXPECT_TRUE(has(r.output, "Gloo has no reduce-scatter")) << r.output;
  const std::string run = run_folder_in(dir.path() + "/results");
  std::ifstream in(run + "/summary.json");
  const json s = json::parse(in);
  ASSERT_EQ(s["cases"].size(), 3u);
  const json& gemm = s["cases"][0];
  EXPECT_EQ(gemm["case"], "computation-FP32:CPU:1:1:2");
  EXPECT_EQ(gemm["family"], "base");
  EXPECT_EQ(gemm["aggregate"]["rounds_used"], 2);
  EXPECT_EQ(gemm["aggregate"]["value"]["n"], 2);
  EXPECT_EQ(gemm["rounds"][0]["unit"], "TFLOP/s");
  EXPECT_TRUE(gemm["rounds"][0]["correct"].get<bool>());
  EXPECT_EQ(s["cases"][1]["rounds"][0]["status"], "ok");
  EXPECT_EQ(s["cases"][2]["rounds"][0]["status"], "failed");
  std::ifstream md(run + "/summary.md");
  const std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(has(text, "| base case | rounds ok / run | figure |")) << text;
  EXPECT_TRUE(has(text, "| computation-FP32:CPU:1:1:2 | 2 / 2 | median |")) << text;
  // The plan as run keeps the base section and its overrides (what --resume reads).
  std::ifstream as_run(run + "/plan.yaml");
  const std::string plan_text((std::istreambuf_iterator<char>(as_run)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(has(plan_text, "\"computation-FP32:CPU:1:1:2\":")) << plan_text;
  EXPECT_TRUE(has(plan_text, "cpu_size: 256")) << plan_text;
  const Result resumed = xpuperf({"--root", kRoot, "check", run + "/plan.yaml"}, dir.path());
  EXPECT_EQ(resumed.code, 0) << resumed.output;
}

TEST(ShippedPlans, EveryPlanChecksClean) {
  for (const auto& entry : std::filesystem::directory_iterator(kRoot + "/plans")) {
    const Result r = xpuperf({"--root", kRoot, "check", entry.path().string()}, kRoot);
    EXPECT_EQ(r.code, 0) << entry.path() << "\n" << r.output;
  }
}

}  // namespace
}  // namespace xpuperf
