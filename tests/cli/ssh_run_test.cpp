// `xpuperf run` through the ssh launcher against a real sshd on loopback: two "hosts"
// (127.0.0.1 and 127.0.0.2) with verified host keys, a 2-node round, and an unreachable host.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_util.h"

namespace xpuperf {
namespace {
namespace fs = std::filesystem;

const char* kData = "/usr/share/datasets/fashion-mnist";

class SshRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "sshd on loopback needs root";
    if (!fs::exists("/usr/sbin/sshd")) GTEST_SKIP() << "openssh-server is not installed";
    if (!fs::exists(std::string(kData) + "/train-images-idx3-ubyte.gz")) GTEST_SKIP() << "Fashion-MNIST is missing";
    const std::string d = dir.path();
    ASSERT_TRUE(run_ok({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", d + "/host_key"}));
    ASSERT_TRUE(run_ok({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", d + "/user_key"}));
    fs::copy_file(d + "/user_key.pub", d + "/authorized_keys");
    port = free_local_port();
    dir.write("sshd_config", "Port " + std::to_string(port) +
                                 "\nListenAddress 127.0.0.1\nListenAddress 127.0.0.2\nHostKey " + d +
                                 "/host_key\nPidFile " + d +
                                 "/sshd.pid\nPermitRootLogin prohibit-password\n"
                                 "PasswordAuthentication no\nKbdInteractiveAuthentication no\nAuthorizedKeysFile " +
                                 d + "/authorized_keys\nStrictModes no\nUsePAM no\n");
    // The hosts' keys, so that the client verifies them instead of skipping the check.
    const std::string host_key = test::read_file(d + "/host_key.pub");
    dir.write("known_hosts", "[127.0.0.1]:" + std::to_string(port) + " " + host_key +
                                 "[127.0.0.2]:" + std::to_string(port) + " " + host_key);
    fs::create_directories("/run/sshd");
    ProcessSpec spec;
    spec.argv = {"/usr/sbin/sshd", "-D", "-e", "-f", d + "/sshd_config"};
    spec.log_path = d + "/sshd.log";
    sshd = Process::start(spec);
    while (sshd->running()) {  // until it answers (or dies: then the log says why)
      if (run_ok(ssh_probe())) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << "sshd did not start: " << test::read_file(d + "/sshd.log");
  }
  void TearDown() override {
    if (sshd) sshd->stop(std::chrono::seconds(2));
  }
  std::vector<std::string> ssh_probe() {
    return {"ssh",
            "-p",
            std::to_string(port),
            "-i",
            dir.path() + "/user_key",
            "-o",
            "BatchMode=yes",
            "-o",
            "UserKnownHostsFile=" + dir.path() + "/known_hosts",
            "root@127.0.0.1",
            "true"};
  }
  std::string plan(const std::string& hosts, const std::string& key) {
    return dir.write("plan.yaml", "vendor: cpu\nlog_dir: " + dir.path() + "/results\nlauncher: ssh\nhosts: [" + hosts +
                                      "]\nmaster_port: " + std::to_string(free_local_port()) + "\nssh:\n  port: " +
                                      std::to_string(port) + "\n  user: root\n  known_hosts: " + dir.path() +
                                      "/known_hosts\n  identity_file: " + dir.path() + "/user_key\n" +
                                      "  connect_timeout: 60\ncases:\n  \"" + key + "\": " + kData + "\n");
  }
  Result run(const std::string& plan_path) {
    return xpuperf({"--root", test::test_path("fixtures/run_repo"), "run", plan_path}, dir.path(), {}, 300);
  }
  test::TempDir dir;
  int port = 0;
  std::unique_ptr<Process> sshd;
};

TEST_F(SshRun, RunsATwoNodeRoundOverSsh) {
  const Result r = run(plan("127.0.0.1, 127.0.0.2", "lenet5:libtorch:CPU:2:1:1"));
  ASSERT_EQ(r.code, 0) << r.output << test::read_file(dir.path() + "/sshd.log");
  EXPECT_TRUE(has(r.output, "(launcher ssh)")) << r.output;
  EXPECT_TRUE(has(r.output, "| lenet5:libtorch:CPU:2:1:1 | 1 | ok |")) << r.output;
  const std::string round = run_folder_in(dir.path() + "/results") + "/lenet5_libtorch_CPU_2_1_1/round1";
  // Both nodes' logs are there, each rank's in its node's folder.
  EXPECT_TRUE(fs::exists(round + "/127.0.0.1_noderank0/rank0.out.log"));
  EXPECT_TRUE(fs::exists(round + "/127.0.0.2_noderank1/rank1.out.log"));
  EXPECT_TRUE(has(test::read_file(round + "/127.0.0.1_noderank0/rank0.out.log"), "\"world_size\":2"));
}

TEST_F(SshRun, AllReduceAcrossTwoNodesCountsEveryRank) {
  // A base case over two node agents (one rank each) reached through ssh; busbw uses n = 2.
  std::string text = test::read_file(plan("127.0.0.1, 127.0.0.2", "lenet5:libtorch:CPU:1:1:1"));
  text = text.substr(0, text.find("cases:")) +
         "base:\n  \"interconnect-allreduce:CPU:2:1:1\": {cpu_max_bytes: 1048576, cpu_iterations: 2}\n";
  const std::string plan_path = dir.write("base.yaml", text);
  const Result r = xpuperf({"--root", XPUPERF_SOURCE_DIR, "run", plan_path}, dir.path(), {}, 300);
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string round = run_folder_in(dir.path() + "/results") + "/interconnect-allreduce_base_CPU_2_1_1/round1";
  const std::string log = test::read_file(round + "/127.0.0.1_noderank0/rank0.out.log");
  EXPECT_TRUE(has(log, "\"world_size\":2")) << log;
  EXPECT_TRUE(has(log, "\"busbw_factor\":1.0")) << log;
  EXPECT_TRUE(has(log, "0 wrong elements over 5 sizes")) << log;
  EXPECT_TRUE(fs::exists(round + "/127.0.0.2_noderank1/rank1.out.log"));
}

TEST_F(SshRun, AnUnreachableHostStopsTheRunAtStepOne) {
  const Result r = run(plan("127.0.0.1, 127.0.0.3", "lenet5:libtorch:CPU:2:1:1"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "cannot reach 127.0.0.3 over ssh")) << r.output;
  EXPECT_FALSE(has(r.output, "cannot reach 127.0.0.1")) << r.output;
}

TEST_F(SshRun, AnUnknownHostKeyIsRefused) {
  dir.write("known_hosts", "");  // the client must not accept a key it cannot verify
  const Result r = run(plan("127.0.0.1", "lenet5:libtorch:CPU:1:1:1"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "cannot reach 127.0.0.1 over ssh")) << r.output;
}

}  // namespace
}  // namespace xpuperf
