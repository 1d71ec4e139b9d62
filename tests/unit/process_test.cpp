#include "xpuperf/core/process.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "test_util.h"

namespace xpuperf {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Alive and not a zombie.
bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return close == std::string::npos || text.substr(close + 2, 1) != "Z";
}

bool gone_soon(pid_t pid) {
  for (int i = 0; i < 200 && alive(pid); ++i) std::this_thread::sleep_for(10ms);
  return !alive(pid);
}

std::vector<pid_t> pids_in(const std::string& text) {
  std::vector<pid_t> pids;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0]))) pids.push_back(std::stoi(line));
  return pids;
}

class ProcessTest : public ::testing::Test {
 protected:
  ProcessSpec spec(std::vector<std::string> argv) {
    ProcessSpec s;
    s.argv = std::move(argv);
    s.log_path = dir.path() + "/out.log";
    return s;
  }
  std::string log() const { return test::read_file(dir.path() + "/out.log"); }
  test::TempDir dir;
};

TEST_F(ProcessTest, ReportsExitCodeAndWritesStdoutAndStderrToTheLog) {
  const ExitStatus status = run_process(spec({"sh", "-c", "echo out; echo err >&2; exit 3"}));
  EXPECT_EQ(status.kind, ExitStatus::Kind::Exited);
  EXPECT_EQ(status.code, 3);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.describe(), "exited with code 3");
  EXPECT_EQ(log(), "out\nerr\n");
  EXPECT_TRUE(run_process(spec({"true"})).ok());
}

TEST_F(ProcessTest, ArgumentsReachTheProgramVerbatimWithoutAShell) {
  ASSERT_TRUE(run_process(spec({"printf", "%s\\n", "a b", "$(id)", ";", "'q'", "*"})).ok());
  EXPECT_EQ(log(), "a b\n$(id)\n;\n'q'\n*\n");
}

TEST_F(ProcessTest, EnvironmentAndWorkingFolder) {
  ::setenv("XPUPERF_TEST_DROP", "1", 1);
  ::setenv("XPUPERF_TEST_KEEP", "kept", 1);
  ProcessSpec s = spec({"sh", "-c", "echo \"$XPUPERF_TEST_SET|${XPUPERF_TEST_DROP-unset}|$XPUPERF_TEST_KEEP\"; pwd"});
  s.env["XPUPERF_TEST_SET"] = "v=1 2";
  s.unset_env = {"XPUPERF_TEST_DROP"};
  s.cwd = "/tmp";
  ASSERT_TRUE(run_process(s).ok());
  EXPECT_EQ(log(), "v=1 2|unset|kept\n/tmp\n");

  ProcessSpec clean = spec({"/usr/bin/env"});
  clean.inherit_env = false;
  clean.env = {{"ONLY", "this"}};
  ASSERT_TRUE(run_process(clean).ok());
  EXPECT_EQ(log(), "v=1 2|unset|kept\n/tmp\nONLY=this\n");  // the log is appended to
}

TEST_F(ProcessTest, EchoesLinesWithAPrefix) {
  std::stringstream captured;
  auto* old = std::cout.rdbuf(captured.rdbuf());
  ProcessSpec s = spec({"sh", "-c", "echo one; printf 'two\\nthree'"});
  s.echo = true;
  s.echo_prefix = "[rank0] ";
  const ExitStatus status = run_process(s);
  std::cout.rdbuf(old);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(captured.str(), "[rank0] one\n[rank0] two\n[rank0] three\n");
  EXPECT_EQ(log(), "one\ntwo\nthree");
}

TEST_F(ProcessTest, TimeLimitStopsTheProgram) {
  const auto start = Clock::now();
  const ExitStatus status = run_process(spec({"sleep", "30"}), 0.2s);
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_TRUE(status.timed_out);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.kind, ExitStatus::Kind::Signaled);
  EXPECT_EQ(status.signal, SIGTERM);
  EXPECT_NE(status.describe().find("after its time limit"), std::string::npos);
}

TEST_F(ProcessTest, StopKillsTheWholeProcessTree) {
  auto process = Process::start(spec({"sh", "-c", "sleep 30 & echo $!; sh -c 'sleep 30 & echo $!; wait' & wait"}));
  std::vector<pid_t> children;
  for (int i = 0; i < 300 && children.size() < 2; ++i) {
    std::this_thread::sleep_for(10ms);
    children = pids_in(log());
  }
  ASSERT_EQ(children.size(), 2u) << log();
  for (pid_t pid : children) ASSERT_TRUE(alive(pid));
  const ExitStatus status = process->stop(1s);
  EXPECT_TRUE(status.stopped);
  EXPECT_EQ(status.kind, ExitStatus::Kind::Signaled);
  for (pid_t pid : children) EXPECT_TRUE(gone_soon(pid)) << pid;
}

TEST_F(ProcessTest, KillsAProgramThatIgnoresTermAfterTheGracePeriod) {
  auto process = Process::start(spec({"sh", "-c", "trap '' TERM; echo ready; sleep 30"}));
  for (int i = 0; i < 300 && log().empty(); ++i) std::this_thread::sleep_for(10ms);
  const auto start = Clock::now();
  const ExitStatus status = process->wait(0.1s, 0.3s);
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_TRUE(status.timed_out);
  EXPECT_EQ(status.kind, ExitStatus::Kind::Signaled);
  EXPECT_EQ(status.signal, SIGKILL);
}

TEST_F(ProcessTest, ChildrenLeftBehindAreStoppedWhenTheProgramEnds) {
  const auto start = Clock::now();
  const ExitStatus status = run_process(spec({"sh", "-c", "sleep 30 & echo $!"}));
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_TRUE(status.ok());
  const auto pids = pids_in(log());
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_TRUE(gone_soon(pids[0]));
}

TEST_F(ProcessTest, ReportsDeathBySignal) {
  const ExitStatus status = run_process(spec({"sh", "-c", "kill -9 $$"}));
  EXPECT_EQ(status.kind, ExitStatus::Kind::Signaled);
  EXPECT_EQ(status.signal, SIGKILL);
  EXPECT_FALSE(status.timed_out);
  EXPECT_NE(status.describe().find("killed by signal 9"), std::string::npos);
}

TEST_F(ProcessTest, ProgramsThatCannotStartAreClearErrors) {
  try {
    Process::start(spec({"xpuperf-no-such-program"}));
    FAIL() << "expected ProcessError";
  } catch (const ProcessError& e) {
    EXPECT_STREQ(e.what(), "cannot execute: No such file or directory (program 'xpuperf-no-such-program')");
  }
  ProcessSpec bad_cwd = spec({"true"});
  bad_cwd.cwd = "/no/such/folder";
  try {
    Process::start(bad_cwd);
    FAIL() << "expected ProcessError";
  } catch (const ProcessError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot enter working folder"), std::string::npos);
  }
  ProcessSpec bad_log = spec({"true"});
  bad_log.log_path = "/no/such/folder/x.log";
  EXPECT_THROW(Process::start(bad_log), ProcessError);
  EXPECT_THROW(Process::start(ProcessSpec{}), ProcessError);
}

TEST_F(ProcessTest, DestructorStopsARunningProgram) {
  pid_t pid;
  {
    auto process = Process::start(spec({"sleep", "30"}));
    pid = process->pid();
    EXPECT_TRUE(process->running());
  }
  EXPECT_TRUE(gone_soon(pid));
}

}  // namespace
}  // namespace xpuperf

namespace xpuperf {
namespace {

std::vector<std::unique_ptr<Process>> start_all(const std::vector<std::vector<std::string>>& commands) {
  std::vector<std::unique_ptr<Process>> out;
  for (const auto& argv : commands) {
    ProcessSpec spec;
    spec.argv = argv;
    out.push_back(Process::start(spec));
  }
  return out;
}

TEST(WaitAll, TheFirstFailureStopsTheOthers) {
  auto group = start_all({{"sleep", "30"}, {"sh", "-c", "sleep 0.1; exit 3"}, {"sleep", "30"}});
  const auto start = std::chrono::steady_clock::now();
  const GroupOutcome outcome = wait_all(group, std::nullopt, nullptr, std::chrono::seconds(1));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(outcome.end, GroupOutcome::End::OneFailed);
  EXPECT_EQ(outcome.failed, 1);
  ASSERT_EQ(outcome.statuses.size(), 3u);
  EXPECT_EQ(outcome.statuses[1].code, 3);
  EXPECT_TRUE(outcome.statuses[0].stopped);
  EXPECT_TRUE(outcome.statuses[2].stopped);
}

// The others may end by themselves within the settling time (their own report, their results),
// and one that does not is stopped when it is up.
TEST(WaitAll, AfterAFailureTheOthersSettleBeforeTheyAreStopped) {
  auto group = start_all({{"sh", "-c", "exit 2"}, {"sh", "-c", "sleep 0.3; exit 0"}});
  GroupOutcome outcome = wait_all(group, std::nullopt, nullptr, std::chrono::seconds(1), std::chrono::minutes(5));
  EXPECT_EQ(outcome.end, GroupOutcome::End::OneFailed);
  EXPECT_EQ(outcome.failed, 0);
  ASSERT_EQ(outcome.statuses.size(), 2u);
  EXPECT_EQ(outcome.statuses[0].code, 2);
  EXPECT_TRUE(outcome.statuses[1].ok());
  EXPECT_FALSE(outcome.statuses[1].stopped);

  group = start_all({{"sh", "-c", "exit 3"}, {"sleep", "30"}});
  const auto start = std::chrono::steady_clock::now();
  outcome = wait_all(group, std::nullopt, nullptr, std::chrono::seconds(1), std::chrono::milliseconds(300));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
  EXPECT_EQ(outcome.end, GroupOutcome::End::OneFailed);
  EXPECT_TRUE(outcome.statuses[1].stopped);
}

TEST(WaitAll, AllExitingIsSuccess) {
  auto group = start_all({{"true"}, {"sh", "-c", "sleep 0.1"}});
  const GroupOutcome outcome = wait_all(group, std::chrono::seconds(10), nullptr);
  EXPECT_EQ(outcome.end, GroupOutcome::End::AllExited);
  EXPECT_EQ(outcome.failed, -1);
  for (const auto& s : outcome.statuses) EXPECT_TRUE(s.ok());
}

TEST(WaitAll, TheTimeLimitAndAStopRequestEndTheWait) {
  auto slow = start_all({{"sleep", "30"}});
  EXPECT_EQ(wait_all(slow, std::chrono::milliseconds(200), nullptr).end, GroupOutcome::End::TimedOut);
  // A Ctrl-C (the handler sets the flag) that has come when the wait looks: at its first look,
  // with both processes still running, and nothing timed that a loaded machine could outlast.
  std::atomic<int> stop{SIGINT};
  auto more = start_all({{"sleep", "30"}, {"sleep", "30"}});
  const GroupOutcome outcome = wait_all(more, std::nullopt, &stop);
  EXPECT_EQ(outcome.end, GroupOutcome::End::Stopped);
  for (const auto& s : outcome.statuses) EXPECT_TRUE(s.stopped);
}

}  // namespace
}  // namespace xpuperf
