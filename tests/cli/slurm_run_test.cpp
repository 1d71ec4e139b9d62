// `xpuperf run` through the slurm launcher against a real Slurm on this machine: two nodes (two
// slurmd of one host, n1 and n2), munged, slurmctld, all started here with their own config and
// stopped by pid.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <thread>

#include "cli_util.h"

namespace xpuperf {
namespace {
namespace fs = std::filesystem;

const char* kData = "/usr/share/datasets/fashion-mnist";

class SlurmRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "a test Slurm needs root";
    for (const char* tool : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "/usr/bin/srun"})
      if (!fs::exists(tool)) GTEST_SKIP() << tool << " is missing (apt-get install slurm-wlm)";
    if (!fs::exists(std::string(kData) + "/train-images-idx3-ubyte.gz")) GTEST_SKIP() << "Fashion-MNIST is missing";
    // A munged of our own (its own key and socket), so nothing is shared with the host or with
    // a test running beside this one.
    const std::string d = dir.path();
    fs::permissions(d, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    ASSERT_TRUE(run_ok({"dd", "if=/dev/urandom", "of=" + d + "/munge.key", "bs=1024", "count=1"}));
    fs::permissions(d + "/munge.key", fs::perms::owner_read);
    munged =
        start({"/usr/sbin/munged", "-F", "--force", "--socket=" + d + "/munge.sock", "--key-file=" + d + "/munge.key",
               "--pid-file=" + d + "/munged.pid", "--seed-file=" + d + "/munge.seed"},
              "munged.log");
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    // Three distinct ports from the system: slurmctld's and the two slurmds'.
    std::set<int> ports;
    while (ports.size() < 3) ports.insert(free_local_port());
    const std::vector<int> port(ports.begin(), ports.end());
    fs::create_directories(d + "/state");
    fs::create_directories(d + "/spool-n1");
    fs::create_directories(d + "/spool-n2");
    const std::string node = std::string(" NodeHostname=") + host + " NodeAddr=127.0.0.1 CPUs=1 RealMemory=1000 Port=";
    conf = dir.write("slurm.conf",
                     "ClusterName=xpuperf-test\nSlurmctldHost=" + std::string(host) +
                         "(127.0.0.1)\nSlurmctldPort=" + std::to_string(port[0]) + "\nNodeName=n1" + node +
                         std::to_string(port[1]) + "\nNodeName=n2" + node + std::to_string(port[2]) +
                         "\nPartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP\n"
                         "AuthType=auth/munge\nAuthInfo=socket=" +
                         d +
                         "/munge.sock\nCredType=cred/munge\nSlurmUser=root\nSlurmdUser=root\n"
                         "StateSaveLocation=" +
                         d + "/state\nSlurmdSpoolDir=" + d +
                         "/spool-%n\n"
                         "SlurmctldPidFile=" +
                         d + "/slurmctld.pid\nSlurmdPidFile=" + d +
                         "/slurmd-%n.pid\n"
                         "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                         "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
                         "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nReturnToService=2\n"
                         "MpiDefault=none\n");
    slurmctld = start({"/usr/sbin/slurmctld", "-D", "-f", conf}, "slurmctld.log");
    slurmd1 = start({"/usr/sbin/slurmd", "-D", "-N", "n1", "-f", conf}, "slurmd-n1.log");
    slurmd2 = start({"/usr/sbin/slurmd", "-D", "-N", "n2", "-f", conf}, "slurmd-n2.log");
    // Until both nodes take work, while the daemons live (a loaded machine only makes it slower;
    // ctest's TIMEOUT is the backstop).
    while (slurmctld->running() && slurmd1->running() && slurmd2->running()) {
      if (run_ok({"srun", "-N2", "-n2", "--immediate=5", "true"}, {{"SLURM_CONF", conf}})) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << "Slurm did not come up: " << test::read_file(d + "/slurmctld.log")
           << test::read_file(d + "/slurmd-n1.log");
  }
  void TearDown() override {
    for (auto* p : {&slurmd1, &slurmd2, &slurmctld, &munged})
      if (*p) (*p)->stop(std::chrono::seconds(3));
  }
  std::unique_ptr<Process> start(std::vector<std::string> argv, const std::string& log) {
    ProcessSpec spec;
    spec.argv = std::move(argv);
    spec.log_path = dir.path() + "/" + log;
    return Process::start(spec);
  }
  Result run(const std::string& key) {
    const std::string plan =
        dir.write("plan.yaml", "vendor: cpu\nlog_dir: " + dir.path() +
                                   "/results\nlauncher: slurm\ncase_time_limit: 5m\nmaster_port: " +
                                   std::to_string(free_local_port()) + "\ncases:\n  \"" + key + "\": " + kData + "\n");
    return xpuperf({"--root", test::test_path("fixtures/run_repo"), "run", plan}, dir.path(), {{"SLURM_CONF", conf}},
                   300);
  }
  test::TempDir dir;
  std::string conf;
  std::unique_ptr<Process> munged, slurmctld, slurmd1, slurmd2;
};

TEST_F(SlurmRun, RunsATwoNodeRoundThroughSrun) {
  const Result r = run("lenet5:libtorch:CPU:2:1:1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "(launcher slurm)")) << r.output;
  EXPECT_TRUE(has(r.output, "| lenet5:libtorch:CPU:2:1:1 | 1 | ok |")) << r.output;
  const std::string round = run_folder_in(dir.path() + "/results") + "/lenet5_libtorch_CPU_2_1_1/round1";
  EXPECT_TRUE(fs::exists(round + "/n1_noderank0/rank0.out.log"));
  EXPECT_TRUE(fs::exists(round + "/n2_noderank1/rank1.out.log"));
  EXPECT_TRUE(has(test::read_file(round + "/n1_noderank0/rank0.out.log"), "\"world_size\":2"));
}

TEST_F(SlurmRun, MoreNodesThanThePartitionHasIsRefusedAtStepOne) {
  const Result r = run("lenet5:libtorch:CPU:3:1:1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "needs 3 nodes but the Slurm partition has 2")) << r.output;
}

}  // namespace
}  // namespace xpuperf
