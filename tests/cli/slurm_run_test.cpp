// `xpuperf run` through the slurm launcher against a real one-node Slurm (munged, slurmctld and
// slurmd started here with their own config, stopped by pid).

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "cli_util.h"

namespace xpuperf {
namespace {
namespace fs = std::filesystem;

const char* kData = "/usr/share/datasets/fashion-mnist";

bool run_ok(std::vector<std::string> argv, const std::map<std::string, std::string>& env = {}) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.env = env;
  try {
    return run_process(spec, std::chrono::seconds(20)).ok();
  } catch (const ProcessError&) {
    return false;
  }
}

class SlurmRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "a test Slurm needs root";
    for (const char* tool : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "/usr/bin/srun"})
      if (!fs::exists(tool)) GTEST_SKIP() << tool << " is missing (apt-get install slurm-wlm)";
    if (!fs::exists(std::string(kData) + "/train-images-idx3-ubyte.gz")) GTEST_SKIP() << "Fashion-MNIST is missing";
    if (!run_ok({"munge", "-n"})) {  // no munged yet: start one
      fs::create_directories("/run/munge");
      ASSERT_TRUE(run_ok({"chown", "munge:munge", "/run/munge"}));
      munged = start({"runuser", "-u", "munge", "--", "/usr/sbin/munged", "-F"}, "munged.log");
      for (int i = 0; i < 100 && !run_ok({"munge", "-n"}); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    const int port = 20000 + ::getpid() % 20000;
    const std::string d = dir.path();
    fs::create_directories(d + "/state");
    fs::create_directories(d + "/spool");
    conf = dir.write("slurm.conf",
                     std::string("ClusterName=xpuperf-test\nSlurmctldHost=") + host + "(127.0.0.1)\nSlurmctldPort=" +
                         std::to_string(port) + "\nSlurmdPort=" + std::to_string(port + 1) + "\nNodeName=" + host +
                         " NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\n"
                         "PartitionName=debug Nodes=" +
                         host +
                         " Default=YES MaxTime=INFINITE State=UP\n"
                         "AuthType=auth/munge\nCredType=cred/munge\nSlurmUser=root\nSlurmdUser=root\n"
                         "StateSaveLocation=" +
                         d + "/state\nSlurmdSpoolDir=" + d +
                         "/spool\n"
                         "SlurmctldPidFile=" +
                         d + "/slurmctld.pid\nSlurmdPidFile=" + d +
                         "/slurmd.pid\n"
                         "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                         "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
                         "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nReturnToService=2\n"
                         "MpiDefault=none\n");
    slurmctld = start({"/usr/sbin/slurmctld", "-D", "-f", conf}, "slurmctld.log");
    slurmd = start({"/usr/sbin/slurmd", "-D", "-f", conf}, "slurmd.log");
    for (int i = 0; i < 200; ++i) {  // until the node is idle
      if (run_ok({"srun", "-N1", "-n1", "true"}, {{"SLURM_CONF", conf}})) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "Slurm did not come up: " << test::read_file(d + "/slurmctld.log") << test::read_file(d + "/slurmd.log");
  }
  void TearDown() override {
    for (auto* p : {&slurmd, &slurmctld, &munged})
      if (*p) (*p)->stop(std::chrono::seconds(3));
  }
  std::unique_ptr<Process> start(std::vector<std::string> argv, const std::string& log) {
    ProcessSpec spec;
    spec.argv = std::move(argv);
    spec.log_path = dir.path() + "/" + log;
    return Process::start(spec);
  }
  Result run(const std::string& key) {
    const std::string plan = dir.write("plan.yaml", "vendor: cpu\nlog_dir: " + dir.path() +
                                                        "/results\nlauncher: slurm\ncase_time_limit: 5m\ncases:\n  \"" +
                                                        key + "\": " + kData + "\n");
    return xpuperf({"--root", test::test_path("fixtures/run_repo"), "run", plan}, dir.path(), {{"SLURM_CONF", conf}},
                   300);
  }
  test::TempDir dir;
  std::string conf;
  std::unique_ptr<Process> munged, slurmctld, slurmd;
};

TEST_F(SlurmRun, RunsARoundThroughSrun) {
  const Result r = run("lenet5:libtorch:CPU:1:1:2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "(launcher slurm)")) << r.output;
  EXPECT_TRUE(has(r.output, "| lenet5:libtorch:CPU:1:1:2 | 2 | ok |")) << r.output;
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  std::string run_dir;
  for (const auto& e : fs::directory_iterator(dir.path() + "/results")) run_dir = e.path().string();
  EXPECT_TRUE(fs::exists(run_dir + "/lenet5_libtorch_CPU_1_1_2/round1/" + host + "_noderank0/rank0.out.log"));
}

TEST_F(SlurmRun, MoreNodesThanThePartitionHasIsRefusedAtStepOne) {
  const Result r = run("lenet5:libtorch:CPU:2:1:1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "needs 2 nodes but the Slurm partition has 1")) << r.output;
}

}  // namespace
}  // namespace xpuperf
