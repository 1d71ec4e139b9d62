#include "xpuperf/core/plan.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace xpuperf {
namespace {

std::optional<Plan> load(const std::string& text, Diagnostics& diags) {
  return load_plan_text(text, "plan.yaml", diags);
}

TEST(Plan, DefaultsForAMinimalPlan) {
  Diagnostics diags;
  auto plan = load("vendor: cpu\ncases:\n  \"lenet5:libtorch:CPU:1:1:1\": /data\n", diags);
  ASSERT_TRUE(plan) << diags.format();
  EXPECT_EQ(plan->vendor, "cpu");
  EXPECT_EQ(plan->hosts, std::vector<std::string>{"localhost"});
  EXPECT_EQ(plan->launcher, "local");
  EXPECT_EQ(plan->log_dir, "results");
  EXPECT_EQ(plan->log_level, "info");
  EXPECT_EQ(plan->master_port, 0) << "unset: a free port each round of the local launcher, 29501 across hosts";
  EXPECT_EQ(plan->ssh.port, 22);
  EXPECT_EQ(plan->visible_devices_env, "CUDA_VISIBLE_DEVICES");
  EXPECT_FALSE(plan->clear_caches);
  EXPECT_DOUBLE_EQ(plan->case_time_limit_s, 86400.0);
  ASSERT_EQ(plan->cases.size(), 1u);
  EXPECT_EQ(plan->cases[0].key.model, "lenet5");
  EXPECT_EQ(plan->cases[0].data_dir, "/data");
  EXPECT_EQ(plan->cases[0].source.str(), "plan.yaml:3");
}

TEST(Plan, ReadsEveryKey) {
  Diagnostics diags;
  auto plan = load(
      "vendor: nvidia\nlog_dir: /r\nlog_level: debug\nhosts: [10.0.0.1, node-2.example.com, \"fe80::1\"]\n"
      "ssh: {port: 2222, user: bench, known_hosts: /k, identity_file: /id, connect_timeout: 5}\n"
      "launcher: slurm\nslurm_partition: gpu\nmaster_port: 29600\nvisible_devices_env: MLU_VISIBLE_DEVICES\n"
      "shm_size: 64G\nclear_caches: true\ncase_time_limit: 90m\ndeploy_path: /opt/xpuperf\n"
      "cases:\n  \"resnet50:libtorch:H100:2:8:3\": /data/imagenet\n  \"lenet5:libtorch:H100:1:1:1\": /data/f\n",
      diags);
  ASSERT_TRUE(plan) << diags.format();
  EXPECT_EQ(plan->hosts.size(), 3u);
  EXPECT_EQ(plan->ssh.port, 2222);
  EXPECT_EQ(plan->ssh.user, "bench");
  EXPECT_EQ(plan->ssh.known_hosts, "/k");
  EXPECT_EQ(plan->ssh.identity_file, "/id");
  EXPECT_EQ(plan->ssh.connect_timeout_s, 5);
  EXPECT_EQ(plan->launcher, "slurm");
  EXPECT_EQ(plan->slurm_partition, "gpu");
  EXPECT_EQ(plan->master_port, 29600);
  EXPECT_EQ(plan->visible_devices_env, "MLU_VISIBLE_DEVICES");
  EXPECT_EQ(plan->shm_size, "64G");
  EXPECT_TRUE(plan->clear_caches);
  EXPECT_DOUBLE_EQ(plan->case_time_limit_s, 5400.0);
  EXPECT_EQ(plan->deploy_path, "/opt/xpuperf");
  ASSERT_EQ(plan->cases.size(), 2u);
  EXPECT_EQ(plan->cases[0].key.nnodes, 2);
  EXPECT_EQ(plan->log_level, "debug");
}

TEST(Plan, SeveralRemoteHostsDefaultToSsh) {
  Diagnostics diags;
  auto plan = load("vendor: cpu\nhosts: [a, b]\ncases: {\"x:y:z:2:1:1\": /d}\n", diags);
  ASSERT_TRUE(plan) << diags.format();
  EXPECT_EQ(plan->launcher, "ssh");
}

TEST(Plan, ReportsEveryProblemAtOnce) {
  Diagnostics diags;
  EXPECT_FALSE(
      load("vendr: cpu\n"                     // 1 unknown key (and vendor missing)
           "hosts: [\"a;rm -rf /\", b, b]\n"  // 2 bad host, duplicate host
           "master_port: 70000\n"             // 3
           "clear_caches: yes\n"              // 4 (a string in YAML 1.2)
           "case_time_limit: soon\n"          // 5
           "launcher: mpi\n"                  // 6
           "cases:\n"
           "  \"lenet5:libtorch:CPU:1:1\": /d\n"     // 8 five fields
           "  \"lenet5:libtorch:CPU:4:1:1\": /d\n",  // 9 more nodes than hosts
           diags));
  const std::string text = diags.format();
  for (const char* expected : {
           "plan.yaml:1: error: unknown key 'vendr'\n    fix: did you mean 'vendor'?",
           "plan.yaml: error: missing required key 'vendor'",
           "plan.yaml:2: error: 'a;rm -rf /' is not a valid host name or address",
           "plan.yaml:2: error: host 'b' is listed twice",
           "plan.yaml:3: error: 'master_port' must be between 1 and 65535, got 70000",
           "plan.yaml:4: error: 'clear_caches' must be true or false, got \"yes\"",
           "plan.yaml:5: error: 'case_time_limit' must be a duration like 3600, 90m, 2h or 1d, got \"soon\"",
           "plan.yaml:6: error: 'launcher' must be one of local, ssh, slurm, got 'mpi'",
           "plan.yaml:8: error: case key 'lenet5:libtorch:CPU:1:1' has 5 fields, expected 6",
           "plan.yaml:9: error: case 'lenet5:libtorch:CPU:4:1:1' needs 4 nodes but the plan has 2 hosts",
       }) {
    EXPECT_NE(text.find(expected), std::string::npos) << "missing: " << expected << "\nin:\n" << text;
  }
  EXPECT_EQ(diags.error_count(), 10) << text;
}

TEST(Plan, LocalLauncherNeedsLocalHosts) {
  Diagnostics diags;
  EXPECT_FALSE(load("vendor: cpu\nhosts: [n1, n2]\nlauncher: local\ncases: {\"a:b:c:1:1:1\": /d}\n", diags));
  EXPECT_NE(diags.format().find("plan.yaml:3: error: the local launcher runs on this machine only"), std::string::npos);
  // Several loopback addresses: node agents on this machine, started without ssh.
  Diagnostics loopback;
  auto plan = load("vendor: cpu\nhosts: [127.0.0.1, 127.0.0.2]\ncases: {\"a:b:c:2:1:1\": /d}\n", loopback);
  ASSERT_TRUE(plan) << loopback.format();
  EXPECT_EQ(plan->launcher, "local");
}

TEST(Plan, CasesAreRequiredAndNeedDataFolders) {
  Diagnostics missing;
  EXPECT_FALSE(load("vendor: cpu\n", missing));
  EXPECT_NE(missing.format().find("missing required key 'cases'"), std::string::npos);
  Diagnostics no_dir;
  EXPECT_FALSE(load("vendor: cpu\ncases:\n  \"a:b:c:1:1:1\":\n", no_dir));
  EXPECT_NE(no_dir.format().find("plan.yaml:3: error: case 'a:b:c:1:1:1' needs a data folder"), std::string::npos);
}

TEST(Plan, SshSectionIsChecked) {
  Diagnostics diags;
  EXPECT_FALSE(
      load("vendor: cpu\nhosts: [a]\nssh:\n  prot: 22\n  user: \"x y\"\ncases: {\"a:b:c:1:1:1\": /d}\n", diags));
  const std::string text = diags.format();
  EXPECT_NE(text.find("plan.yaml:4: error: unknown key 'ssh.prot'"), std::string::npos) << text;
  EXPECT_NE(text.find("plan.yaml:5: error: 'x y' is not a valid user name"), std::string::npos) << text;
}

TEST(Plan, HostNames) {
  for (const char* ok : {"localhost", "10.1.2.3", "gpu-node-01.cluster.local", "fe80::1", "::1"})
    EXPECT_TRUE(is_valid_host(ok)) << ok;
  for (const char* bad : {"", "a;b", "$(reboot)", "a b", "-oProxyCommand=x", "host/x", "a..b", "`id`"})
    EXPECT_FALSE(is_valid_host(bad)) << bad;
  EXPECT_TRUE(is_local_host("127.0.0.2"));
  EXPECT_FALSE(is_local_host("10.0.0.1"));
}

TEST(Plan, Durations) {
  EXPECT_EQ(parse_duration("90"), 90.0);
  EXPECT_EQ(parse_duration("90s"), 90.0);
  EXPECT_EQ(parse_duration("15m"), 900.0);
  EXPECT_EQ(parse_duration("1.5h"), 5400.0);
  EXPECT_EQ(parse_duration("1d"), 86400.0);
  EXPECT_FALSE(parse_duration("0"));
  EXPECT_FALSE(parse_duration("-5m"));
  EXPECT_FALSE(parse_duration("5 minutes"));
}

class PlanCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    dir.write("cases/training/toy/libtorch/config/_base.yaml", "vendor: x\ndata_dir: \"\"\nlr: 0.1\n");
    dir.write("cases/training/toy/libtorch/config/mutable_params.yaml", "mutable_params: [vendor, lr]\n");
    dir.write("vendors/acme/training/toy-libtorch/config/config_X1x1x1.yaml", "vendor: acme\n");
    std::filesystem::create_directories(dir.path() + "/data");
  }
  test::TempDir dir;
  Repo repo{dir.path()};
};

TEST_F(PlanCheck, AcceptsAGoodPlan) {
  Diagnostics diags;
  auto plan = load("vendor: acme\ncases:\n  \"toy:libtorch:X1:1:1:2\": " + dir.path() + "/data\n", diags);
  ASSERT_TRUE(plan);
  check_plan(*plan, repo, diags);
  EXPECT_FALSE(diags.has_errors()) << diags.format();
}

TEST_F(PlanCheck, MissingVendorFolderIsReportedOnceAtTheVendorLine) {
  Diagnostics diags;
  auto plan = load("vendor: acm\ncases:\n  \"toy:libtorch:X1:1:1:1\": /d\n  \"toy:libtorch:X1:1:1:2\": /d\n", diags);
  ASSERT_TRUE(plan);
  check_plan(*plan, repo, diags);
  EXPECT_EQ(diags.error_count(), 1);
  EXPECT_NE(diags.format().find("plan.yaml:1: error: vendor folder"), std::string::npos) << diags.format();
  EXPECT_NE(diags.format().find("did you mean 'acme'?"), std::string::npos) << diags.format();
}

TEST_F(PlanCheck, ReportsEveryCaseProblem) {
  Diagnostics diags;
  auto plan = load("vendor: acme\ncases:\n  \"toy:libtorch:X1:1:8:1\": " + dir.path() +
                       "/data\n  \"toy:libtorch:X1:1:1:1\": /no/such/folder\n  \"moy:libtorch:X1:1:1:1\": /d\n",
                   diags);
  ASSERT_TRUE(plan);
  check_plan(*plan, repo, diags);
  const std::string text = diags.format();
  EXPECT_NE(text.find("plan.yaml:3: error: vendor 'acme' has no X1x1x8 config"), std::string::npos) << text;
  EXPECT_NE(text.find("plan.yaml:4: error: data folder '/no/such/folder' of case toy:libtorch:X1:1:1:1 does not exist"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("plan.yaml:5: error: unknown training case 'moy'"), std::string::npos) << text;
}

// The plans the project ships must stay valid.
TEST(ShippedPlans, AllLoadAndCheck) {
  const Repo repo(XPUPERF_SOURCE_DIR);
  // Plans name folders relative to where they are run from: the checkout.
  const auto previous = std::filesystem::current_path();
  std::filesystem::current_path(XPUPERF_SOURCE_DIR);
  int plans = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(XPUPERF_SOURCE_DIR) + "/plans")) {
    if (entry.path().extension() != ".yaml") continue;
    ++plans;
    Diagnostics diags;
    auto plan = load_plan(entry.path().string(), diags);
    ASSERT_TRUE(plan) << entry.path() << "\n" << diags.format();
    check_plan(*plan, repo, diags);
    // The quickstart's data is installed by scripts/install-deps.sh, the language plan's made by
    // `make language-data` (which `make test` runs); remote plans' data is remote.
    EXPECT_FALSE(diags.has_errors()) << entry.path() << "\n" << diags.format();
  }
  std::filesystem::current_path(previous);
  EXPECT_GE(plans, 1);
}

}  // namespace
}  // namespace xpuperf

namespace xpuperf {
namespace {

TEST(PlanContainer, ReadsTheSection) {
  Diagnostics diags;
  auto plan = load_plan_text(
      "vendor: nvidia\ncontainer:\n  engine: podman\n  image: registry.example.com/team/xpuperf:1.0\n  build: false\n"
      "  run_options: [--gpus, all]\n  mounts: [/data:/data:ro]\n  env: {NCCL_DEBUG: INFO}\n  privileged: true\n"
      "cases: {\"lenet5:libtorch:H100:1:1:1\": /d}\n",
      "plan.yaml", diags);
  ASSERT_TRUE(plan) << diags.format();
  const ContainerSettings& c = plan->container;
  EXPECT_TRUE(c.enabled());
  EXPECT_EQ(c.engine, "podman");
  EXPECT_EQ(c.image, "registry.example.com/team/xpuperf:1.0");
  EXPECT_FALSE(c.build);
  EXPECT_EQ(c.run_options, (std::vector<std::string>{"--gpus", "all"}));
  EXPECT_EQ(c.mounts, (std::vector<std::string>{"/data:/data:ro"}));
  ASSERT_EQ(c.env.size(), 1u);
  EXPECT_EQ(c.env[0].second, "INFO");
  EXPECT_TRUE(c.privileged);
}

TEST(PlanContainer, ProblemsNameTheKey) {
  Diagnostics diags;
  auto plan = load_plan_text(
      "vendor: cpu\ncontainer:\n  engine: lxc\n  image: \"Bad Image\"\n  mount: []\n  run_options: --gpus\n"
      "  mounts: [relative:/x]\n  env: {\"1X\": a}\ncases: {\"x:y:z:1:1:1\": /d}\n",
      "plan.yaml", diags);
  EXPECT_FALSE(plan);
  const std::string text = diags.format();
  EXPECT_NE(text.find("plan.yaml:3: error: 'engine' must be one of none, docker, podman, got 'lxc'"), std::string::npos)
      << text;
  EXPECT_NE(text.find("'Bad Image' is not an image name"), std::string::npos) << text;
  EXPECT_NE(text.find("unknown key 'container.mount'"), std::string::npos) << text;
  EXPECT_NE(text.find("did you mean 'mounts'?"), std::string::npos) << text;
  EXPECT_NE(text.find("'container.run_options' must be a list of strings"), std::string::npos) << text;
  EXPECT_NE(text.find("mount 'relative:/x' must be /host/path:/container/path"), std::string::npos) << text;
  EXPECT_NE(text.find("container.env: '1X' must be a variable name"), std::string::npos) << text;
}

TEST(Plan, TrainingCasesTakeADataFolderOrOverrides) {
  Diagnostics diags;
  auto plan = load(
      "vendor: cpu\ncases:\n  \"resnet50:libtorch:CPU:1:1:1\": {data_dir: /data/jpeg, image_size: 64, lr: 0.002}\n"
      "  \"lenet5:libtorch:CPU:1:1:1\": /data/fashion\n",
      diags);
  ASSERT_TRUE(plan) << diags.format();
  ASSERT_EQ(plan->cases.size(), 2u);
  EXPECT_EQ(plan->cases[0].data_dir, "/data/jpeg");
  EXPECT_EQ(plan->cases[0].sets, (std::vector<std::string>{"image_size=64", "lr=0.002"}));
  EXPECT_EQ(plan->cases[1].data_dir, "/data/fashion");
  EXPECT_TRUE(plan->cases[1].sets.empty());

  Diagnostics missing;
  EXPECT_FALSE(load("vendor: cpu\ncases:\n  \"resnet50:libtorch:CPU:1:1:1\": {max_steps: 30}\n", missing));
  EXPECT_NE(missing.format().find("needs a data folder"), std::string::npos) << missing.format();
  EXPECT_NE(missing.format().find("{data_dir: /path/to/data, max_steps: 30}"), std::string::npos) << missing.format();
}

}  // namespace
}  // namespace xpuperf

namespace xpuperf {
namespace {

// The vendor's vendor.yaml fills what the plan leaves out: the visible-devices variable and the
// container's device options; what the plan says stays.
TEST(PlanVendorDefaults, TheVendorYamlFillsWhatThePlanLeavesOut) {
  test::TempDir dir;
  dir.write("cases/.keep", "");
  dir.write("vendors/acme/vendor.yaml",
            "device_type: privateuse1\ndevice_name: npu\nvisible_devices_env: ASCEND_RT_VISIBLE_DEVICES\n"
            "container_device_options: [--device, /dev/davinci0]\ncollective_backend: hccl\nplugin: acme\n");
  Diagnostics diags;
  auto plan = load_plan_text(
      "vendor: acme\ncontainer: {engine: podman, image: x}\ncases: {\"lenet5:libtorch:X:1:1:1\": /tmp}\n", "p.yaml",
      diags);
  ASSERT_TRUE(plan) << diags.format();
  apply_vendor_defaults(*plan, Repo(dir.path()), diags);
  EXPECT_EQ(plan->visible_devices_env, "ASCEND_RT_VISIBLE_DEVICES");
  EXPECT_EQ(plan->container.run_options, (std::vector<std::string>{"--device", "/dev/davinci0"}));
  auto own = load_plan_text(
      "vendor: acme\nvisible_devices_env: MY_DEVICES\ncases: {\"lenet5:libtorch:X:1:1:1\": /tmp}\n", "p.yaml", diags);
  ASSERT_TRUE(own);
  apply_vendor_defaults(*own, Repo(dir.path()), diags);
  EXPECT_EQ(own->visible_devices_env, "MY_DEVICES");
  dir.write("vendors/acme/vendor.yaml", "device_type: npu\n");
  Diagnostics bad;
  auto broken = load_plan_text("vendor: acme\ncases: {\"lenet5:libtorch:X:1:1:1\": /tmp}\n", "p.yaml", bad);
  ASSERT_TRUE(broken);
  apply_vendor_defaults(*broken, Repo(dir.path()), bad);
  EXPECT_NE(bad.format().find("/vendors/acme/vendor.yaml:1: unknown device_type"), std::string::npos) << bad.format();
  EXPECT_NE(bad.format().find("unknown device_type 'npu'"), std::string::npos) << bad.format();
}

}  // namespace
}  // namespace xpuperf
