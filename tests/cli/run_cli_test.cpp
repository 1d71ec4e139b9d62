// `xpuperf run` end to end with the local launcher: the result tree, a failing rank, the time
// limit, Ctrl-C and --resume. Uses tests/fixtures/run_repo (lenet5 with short, failing and slow
// vendor configs) and the real Fashion-MNIST data.

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_util.h"

namespace xpuperf {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

const char* kData = "/usr/share/datasets/fashion-mnist";

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in, nullptr, false);
}

bool alive(int pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return close == std::string::npos || text.substr(close + 2, 1) != "Z";
}

class RunCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(std::string(kData) + "/train-images-idx3-ubyte.gz"))
      GTEST_SKIP() << "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)";
  }
  // A plan in the temp folder whose results go there too.
  std::string plan(const std::string& cases, const std::string& extra = "") {
    // No master_port: each round takes a free port from the system (tests run side by side).
    return dir.write("plan.yaml", "vendor: cpu\nlog_dir: " + dir.path() + "/results\n" + extra + "cases:\n" + cases);
  }
  std::string case_line(const std::string& key) { return "  \"" + key + "\": " + kData + "\n"; }
  std::string run_dir() { return run_folder_in(dir.path() + "/results"); }
  Result run(std::vector<std::string> args, double limit = 300) {
    std::vector<std::string> all = {"--root", test::test_path("fixtures/run_repo"), "run"};
    all.insert(all.end(), args.begin(), args.end());
    return xpuperf(all, dir.path(), {}, limit);
  }
  // Every rank pid recorded in a round's node_status.json has ended.
  void expect_no_rank_left(const std::string& round_dir) {
    const json status = read_json(round_dir + "/localhost_noderank0/node_status.json");
    ASSERT_TRUE(status.is_object()) << round_dir;
    for (const auto& rank : status["ranks"]) EXPECT_FALSE(alive(rank["pid"].get<int>())) << rank.dump();
  }
  test::TempDir dir;
};

TEST_F(RunCli, RunsEveryRoundAndWritesTheResultTree) {
  const Result r = run({plan(case_line("lenet5:libtorch:CPU:1:1:2"))});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "Step 1: Check environment and configs")) << r.output;
  EXPECT_TRUE(has(r.output, "[1/2] lenet5:libtorch:CPU:1:1:2 round 1/2 ... ok")) << r.output;
  EXPECT_TRUE(has(r.output, "| lenet5:libtorch:CPU:1:1:2 | 2 | ok | ")) << r.output;
  const std::string folder = run_dir();
  for (const char* file : {"plan.yaml", "xpuperf_run.log", "summary.json", "summary.md", "summary.csv"})
    EXPECT_TRUE(fs::exists(folder + "/" + file)) << file;
  EXPECT_EQ(read_json(folder + "/summary.json")["cases"][0]["aggregate"]["rounds_used"], 2);
  const std::string csv = test::read_file(folder + "/summary.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3) << "a header and a row a round: " << csv;
  EXPECT_TRUE(has(csv, "\nlenet5:libtorch:CPU:1:1:2,training,CPU,1,1,2,ok,")) << csv;
  EXPECT_TRUE(has(r.output, "| lenet5:libtorch:CPU:1:1:2 | 2 / 2 |")) << "summary.md is printed: " << r.output;
  // `xpuperf report` rebuilds the same summary from the folder alone.
  const std::string before = test::read_file(folder + "/summary.md");
  fs::remove(folder + "/summary.md");
  const Result report = xpuperf({"report", folder}, dir.path());
  EXPECT_EQ(report.code, 0) << report.output;
  EXPECT_EQ(test::read_file(folder + "/summary.md"), before);
  for (int round = 1; round <= 2; ++round) {
    const std::string round_dir = folder + "/lenet5_libtorch_CPU_1_1_2/round" + std::to_string(round);
    for (const char* file : {"rank0.out.log", "config.yaml", "sys_info.json", "node_status.json", "monitor.csv"})
      EXPECT_TRUE(fs::exists(round_dir + "/localhost_noderank0/" + file)) << file;
    const json status = read_json(round_dir + "/round_status.json");
    EXPECT_EQ(status["status"], "ok");
    EXPECT_EQ(status["finished"]["global_steps"], 20);
    EXPECT_GT(status["monitor"]["peak_host_mem_bytes"].get<double>(), 0.0) << status.dump(2);
  }
  // The config of every round says where each value came from.
  const std::string config =
      test::read_file(folder + "/lenet5_libtorch_CPU_1_1_2/round1/localhost_noderank0/config.yaml");
  EXPECT_TRUE(has(config, "max_steps: 20")) << config;
  EXPECT_TRUE(has(config, "config_CPUx1x1.yaml:5")) << config;
}

TEST_F(RunCli, EveryRunIsRecordedInTheHistory) {
  const std::string db = dir.path() + "/history.db";
  const std::string plan_path = plan(case_line("lenet5:libtorch:CPU:1:1:1"));
  // Back to back, often within one second: the second run gets a folder of its own (run..._2).
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(xpuperf({"--root", test::test_path("fixtures/run_repo"), "run", plan_path}, dir.path(),
                      {{"XPUPERF_HISTORY", db}}, 300)
                  .code,
              0);
  }
  std::size_t folders = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() + "/results")) folders += e.is_directory();
  EXPECT_EQ(folders, 2u);
  const Result h = xpuperf({"history", "--db", db, "--case", "lenet5"}, dir.path());
  EXPECT_EQ(h.code, 0) << h.output;
  std::size_t lines = 0;
  for (auto at = h.output.find("| lenet5:libtorch:CPU:1:1:1 | 1 / 1 |"); at != std::string::npos;
       at = h.output.find("| lenet5:libtorch:CPU:1:1:1 | 1 / 1 |", at + 1))
    ++lines;
  EXPECT_EQ(lines, 2u) << h.output;
  EXPECT_TRUE(has(xpuperf({"history", "--db", db, "--case", "resnet"}, dir.path()).output, "No runs recorded"));
}

TEST_F(RunCli, ClearCachesIsDoneOrSaidToBeImpossible) {
  const Result r = run({plan(case_line("lenet5:libtorch:CPU:1:1:1"), "clear_caches: true\n")});
  ASSERT_EQ(r.code, 0) << r.output;
  const json status = read_json(run_dir() + "/lenet5_libtorch_CPU_1_1_1/round1/round_status.json");
  const std::string what = status["nodes"][0].value("clear_caches", "");
  if (what == "page cache dropped") return;
  EXPECT_EQ(what.rfind("not permitted", 0), 0u) << status.dump(2);
  EXPECT_TRUE(has(r.output, "warning: localhost: clear_caches not permitted")) << r.output;
}

TEST_F(RunCli, RecordsTheHarnessOverheadOfEachRound) {
  const Result r = run({plan(case_line("lenet5:libtorch:CPU:1:1:1"))});
  ASSERT_EQ(r.code, 0) << r.output;
  const json status = read_json(run_dir() + "/lenet5_libtorch_CPU_1_1_1/round1/round_status.json");
  ASSERT_TRUE(status.contains("overhead_start_s")) << status.dump(2);
  EXPECT_GT(status["overhead_start_s"].get<double>(), 0.0);
  EXPECT_GE(status["overhead_end_s"].get<double>(), 0.0);
}

TEST_F(RunCli, TwoNodeAgentsOnThisMachineTakeTheirOwnDevices) {
  const Result r = run({plan(case_line("lenet5:libtorch:CPU:2:1:1"), "hosts: [127.0.0.1, 127.0.0.2]\n")});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "(launcher local)")) << r.output;
  const std::string round = run_dir() + "/lenet5_libtorch_CPU_2_1_1/round1";
  for (int node = 0; node < 2; ++node) {
    const std::string node_dir = round + "/127.0.0." + std::to_string(node + 1) + "_noderank" + std::to_string(node);
    const json status = read_json(node_dir + "/node_status.json");
    ASSERT_TRUE(status.is_object()) << node_dir;
    EXPECT_EQ(status["devices"], json::array({"gpu" + std::to_string(node)})) << status.dump();
    EXPECT_TRUE(fs::exists(node_dir + "/rank" + std::to_string(node) + ".out.log"));
  }
}

TEST_F(RunCli, AFailingRankFailsItsRoundAndThePlanGoesOn) {
  const Result r = run({plan(case_line("lenet5:libtorch:BAD:1:1:1") + case_line("lenet5:libtorch:CPU:1:1:1"))});
  EXPECT_EQ(r.code, 1) << r.output;
  // The reason ends with what the rank said last: the vendor config's line at fault.
  EXPECT_TRUE(has(r.output, "round 1/1 ... failed (rank 0 exited with code 1: ")) << r.output;
  EXPECT_TRUE(has(r.output, "config_BADx1x1.yaml:6: init_checkpoint '/nonexistent/lenet5-weights.pt' does not exist"))
      << r.output;
  EXPECT_TRUE(has(r.output, "| lenet5:libtorch:CPU:1:1:1 | 1 | ok |")) << r.output;
  const json status = read_json(run_dir() + "/lenet5_libtorch_BAD_1_1_1/round1/round_status.json");
  EXPECT_EQ(status["status"], "failed");
  EXPECT_TRUE(has(status["nodes"][0]["log_tails"]["rank0.out.log"].dump(), "does not exist")) << status.dump(2);
}

// The pid of the running rank whose command line holds `needle` (0 when none).
int rank_pid_with(const std::string& needle) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (has(cmdline, " train ") && has(cmdline, needle)) return std::stoi(name);
  }
  return 0;
}

TEST_F(RunCli, ARankKilledMidRoundFailsTheRound) {
  const std::string plan_path = plan(case_line("lenet5:libtorch:SLOW:1:1:1"), "case_time_limit: 20m\n");
  ProcessSpec spec;
  spec.argv = {XPUPERF_BINARY, "--root", test::test_path("fixtures/run_repo"), "run", plan_path};
  spec.cwd = dir.path();
  spec.log_path = dir.path() + "/controller.log";
  spec.env["XPUPERF_HISTORY"] = dir.path() + "/history.db";
  auto controller = Process::start(spec);
  int pid = 0;
  wait_until(*controller, [&] {
    if (!fs::exists(dir.path() + "/results")) return false;
    const std::string log = run_dir() + "/lenet5_libtorch_SLOW_1_1_1/round1/localhost_noderank0/rank0.out.log";
    if (fs::exists(log) && has(test::read_file(log), "STEP_END")) pid = rank_pid_with("--hardware SLOW");
    return pid != 0;
  });
  ASSERT_NE(pid, 0) << test::read_file(spec.log_path);
  ::kill(pid, SIGKILL);
  const ExitStatus status = controller->wait(std::nullopt);
  const std::string output = test::read_file(spec.log_path);
  EXPECT_EQ(status.code, 1) << output;
  EXPECT_TRUE(has(output, "failed (rank 0 killed by signal 9")) << output;
  const json round = read_json(run_dir() + "/lenet5_libtorch_SLOW_1_1_1/round1/round_status.json");
  EXPECT_EQ(round["status"], "failed");
  EXPECT_TRUE(has(round["nodes"][0]["log_tails"]["rank0.out.log"].dump(), "STEP_END")) << "the partial log is kept";
}

TEST_F(RunCli, TheTimeLimitStopsARoundAndLeavesNoProcessBehind) {
  // The slow round never finishes, so however loaded the machine, the limit is what ends it.
  const Result r = run({plan(case_line("lenet5:libtorch:SLOW:1:1:1"), "case_time_limit: 3\n")});
  EXPECT_EQ(r.code, 1) << r.output;
  const std::string round_dir = run_dir() + "/lenet5_libtorch_SLOW_1_1_1/round1";
  EXPECT_EQ(read_json(round_dir + "/round_status.json")["status"], "timed_out");
  EXPECT_TRUE(has(r.output, "timed_out (time limit of 3 s passed)")) << r.output;
  expect_no_rank_left(round_dir);
}

TEST_F(RunCli, CtrlCStopsTheRunKeepsWhatFinishedAndResumeCompletesIt) {
  // A time limit far beyond what the rounds need, however loaded the machine: the first round
  // finishes, and Ctrl-C, not the limit, ends the second.
  const std::string plan_path =
      plan(case_line("lenet5:libtorch:CPU:1:1:1") + case_line("lenet5:libtorch:SLOW:1:1:1"), "case_time_limit: 20m\n");
  ProcessSpec spec;
  spec.argv = {XPUPERF_BINARY, "--root", test::test_path("fixtures/run_repo"), "run", plan_path};
  spec.cwd = dir.path();
  spec.log_path = dir.path() + "/controller.log";
  spec.env["XPUPERF_HISTORY"] = dir.path() + "/history.db";
  auto controller = Process::start(spec);
  // Wait until the slow round's rank is training, then press Ctrl-C.
  std::string slow_log;
  wait_until(*controller, [&] {
    if (!fs::exists(dir.path() + "/results")) return false;
    const std::string candidate = run_dir() + "/lenet5_libtorch_SLOW_1_1_1/round1/localhost_noderank0/rank0.out.log";
    if (fs::exists(candidate) && has(test::read_file(candidate), "STEP_END")) slow_log = candidate;
    return !slow_log.empty();
  });
  ASSERT_FALSE(slow_log.empty()) << test::read_file(spec.log_path);
  ::kill(controller->pid(), SIGINT);
  const ExitStatus status = controller->wait(std::nullopt);
  const std::string output = test::read_file(spec.log_path);
  EXPECT_EQ(status.code, 130) << output;
  EXPECT_TRUE(has(output, "Interrupted: the rounds above were recorded")) << output;
  EXPECT_TRUE(has(output, "| lenet5:libtorch:CPU:1:1:1 | 1 | ok |")) << output;
  const std::string folder = run_dir();
  EXPECT_EQ(read_json(folder + "/lenet5_libtorch_SLOW_1_1_1/round1/round_status.json")["status"], "interrupted");
  expect_no_rank_left(folder + "/lenet5_libtorch_SLOW_1_1_1/round1");

  // The resumed run's slow round never finishes: a short limit in the run's plan ends it, and
  // that it ends as timed_out is what is checked (the slow round trains for as long as it is let).
  std::string resumed_plan = test::read_file(folder + "/plan.yaml");
  const auto at = resumed_plan.find("case_time_limit: 1200");
  ASSERT_NE(at, std::string::npos) << resumed_plan;
  resumed_plan.replace(at, std::string("case_time_limit: 1200").size(), "case_time_limit: 3");
  std::ofstream(folder + "/plan.yaml") << resumed_plan;
  const Result resumed = run({"--resume", folder});
  EXPECT_EQ(resumed.code, 1) << resumed.output;  // the slow round times out this time
  EXPECT_TRUE(has(resumed.output, "round 1/1 ... finished in the earlier run (ok), skipped")) << resumed.output;
  EXPECT_TRUE(has(resumed.output, "lenet5:libtorch:SLOW:1:1:1 round 1/1 ... timed_out")) << resumed.output;
}

TEST_F(RunCli, APlanThatCannotRunStopsAtStepOne) {
  const Result r = run({plan(case_line("lenet5:libtorch:GPU9:1:1:1"))});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "Step 1: Check environment and configs")) << r.output;
  EXPECT_TRUE(has(r.output, "[FAILED]")) << r.output;
  EXPECT_TRUE(has(r.output, "vendor 'cpu' has no GPU9x1x1 config")) << r.output;
  EXPECT_FALSE(fs::exists(dir.path() + "/results"));
}

}  // namespace
}  // namespace xpuperf
