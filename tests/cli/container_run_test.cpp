// `xpuperf run` with the ranks in real podman containers (Debian's podman with runc, the test
// base image made once with debootstrap and cached in /var/tmp): a lenet5 round inside a
// container, --dry-run, a recipe change that rebuilds the image, a failing rank, a time-out and
// Ctrl-C — and no container left behind after any of them. Root only, as TEST-HOSTS.md describes.
//
// The image is a minimal Debian; the host's /usr (and /etc/alternatives) is mounted read-only
// through the plan's container.mounts, so that the host-built xpuperf and LibTorch run inside
// without installing them in the image: what is tested is the container's life, not the image.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_util.h"

namespace xpuperf {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

const std::string kRoot = XPUPERF_SOURCE_DIR;
const char* kData = "/usr/share/datasets/fashion-mnist";
const std::string kPodmanDir = "/var/tmp/xpuperf-test-podman";
const std::string kBaseImage = "localhost/xpuperf-test-base:bookworm";

std::map<std::string, std::string> podman_env() {
  return {{"CONTAINERS_CONF", kPodmanDir + "/containers.conf"},
          {"CONTAINERS_STORAGE_CONF", kPodmanDir + "/storage.conf"}};
}

// Runs a command with the test's podman config; its output, or nullopt when it failed.
std::optional<std::string> output_of(std::vector<std::string> argv, double limit_s = 120) {
  test::TempDir dir;
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.env = podman_env();
  spec.log_path = dir.path() + "/out.log";
  try {
    if (!run_process(spec, std::chrono::duration<double>(limit_s)).ok()) return std::nullopt;
  } catch (const ProcessError&) {
    return std::nullopt;
  }
  return test::read_file(spec.log_path);
}

std::string mirror() {
  std::ifstream in("/etc/apt/sources.list.d/debian.sources");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("URIs:", 0) == 0) return line.substr(line.find_first_not_of(' ', 5));
  return "http://deb.debian.org/debian";
}

// The base image, made once per machine (about 40 s) and kept between test runs.
std::string prepare_podman() {
  if (::geteuid() != 0) return "needs root (podman with runc, as TEST-HOSTS.md describes)";
  for (const char* tool : {"/usr/bin/podman", "/usr/sbin/runc", "/usr/sbin/debootstrap"})
    if (!fs::exists(tool) && !fs::exists(std::string("/usr/bin/") + fs::path(tool).filename().string()))
      return std::string("needs ") + tool + " (apt-get install podman runc debootstrap)";
  fs::create_directories(kPodmanDir);
  std::ofstream(kPodmanDir + "/containers.conf")
      << "[containers]\n"
         "default_ulimits = [\"nofile=20000:20000\", \"nproc=32768:32768\"]\n"
         "[engine]\nruntime = \"runc\"\n";
  std::ofstream(kPodmanDir + "/storage.conf") << "[storage]\ndriver = \"overlay\"\nrunroot = \"" << kPodmanDir
                                              << "/run\"\ngraphroot = \"" << kPodmanDir << "/graph\"\n";
  // One test process builds it; the others wait (ctest runs tests in parallel).
  const int lock = ::open((kPodmanDir + "/base.lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0666);
  ::flock(lock, LOCK_EX);
  std::string problem;
  if (!output_of({"podman", "image", "exists", kBaseImage})) {
    const std::string rootfs = kPodmanDir + "/rootfs";
    fs::remove_all(rootfs);
    if (!output_of({"debootstrap", "--variant=minbase", "bookworm", rootfs, mirror()}, 600))
      problem = "debootstrap of a minimal bookworm failed";
    else if (!output_of({"sh", "-c", "tar -C \"$0\" -c . | podman import - \"$1\"", rootfs, kBaseImage}, 300))
      problem = "podman import of the base image failed";
    fs::remove_all(rootfs);
  }
  ::close(lock);
  return problem;
}

// This test's containers (of its own image: the tests run in parallel), running or not.
std::vector<std::string> leftover_containers(const std::string& image) {
  const auto out = output_of({"podman", "ps", "--all", "--format", "{{.Names}}", "--filter", "ancestor=" + image});
  std::vector<std::string> names;
  std::istringstream in(out.value_or("podman ps failed"));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) names.push_back(line);
  return names;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in, nullptr, false);
}

class PodmanRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(std::string(kData) + "/train-images-idx3-ubyte.gz"))
      GTEST_SKIP() << "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)";
    const std::string problem = prepare_podman();
    if (!problem.empty()) GTEST_SKIP() << "podman test: " << problem;
    // A content tree of its own: the short lenet5 configs, the real inference configs, and a
    // container recipe for vendor cpu.
    fs::copy(kRoot + "/tests/fixtures/run_repo", root.path(), fs::copy_options::recursive);
    fs::create_directories(root.path() + "/cases/inference");
    fs::copy(kRoot + "/cases/inference/lenet5", root.path() + "/cases/inference/lenet5", fs::copy_options::recursive);
    // podman's name for a local image (its `ancestor` filter wants the full name).
    image = "localhost/xpuperf-test-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
            ":latest";
    for (char& c : image)
      if (std::isupper(static_cast<unsigned char>(c))) c = static_cast<char>(std::tolower(c));
    recipe("v1");
    root.write("vendors/cpu/environment_variables.sh", "echo \"sourced vendor env\"\n");
  }
  void TearDown() override {
    if (!image.empty()) output_of({"podman", "rmi", "--force", image});
  }

  // Each test's recipe is its own (the LABEL line), so that no two tests' images are one cached image
  // under two names: podman 4.3's tagging is not safe in parallel (container.cpp, prepare_image), and a
  // test's build could take another test's name back to the shared image.
  void recipe(const std::string& version) {
    root.write("vendors/cpu/container/Dockerfile", "FROM " + kBaseImage + "\nLABEL xpuperf.test=" + image +
                                                       "\nRUN echo " + version + " > /etc/xpuperf-recipe\n");
  }
  std::string plan(const std::string& body, const std::string& extra = "") {
    return dir.write("plan.yaml", "vendor: cpu\nlog_dir: " + dir.path() + "/results\n" + extra +
                                      "container:\n  engine: podman\n  image: " + image +
                                      "\n  mounts: [/usr:/usr:ro, /etc/alternatives:/etc/alternatives:ro]\n" + body);
  }
  Result run(const std::string& plan_path) {
    return xpuperf({"--root", root.path(), "run", plan_path}, dir.path(), podman_env(), 300);
  }
  // The node folder of the run's only round.
  std::string node_dir() {
    for (const auto& run : fs::directory_iterator(dir.path() + "/results"))
      for (const auto& c : fs::directory_iterator(run.path()))
        if (c.is_directory()) return (c.path() / "round1" / "localhost_noderank0").string();
    return "";
  }
  void clear_results() { fs::remove_all(dir.path() + "/results"); }

  test::TempDir root, dir;
  std::string image;
};

const std::string kInference =
    "inference:\n  \"lenet5:libtorch:CPU:1\": {data_dir: /usr/share/datasets/fashion-mnist, compiler: opencv, "
    "latency_queries: 20}\n";

TEST_F(PodmanRun, RoundRunsInsideAContainerAndLeavesNothing) {
  const std::string p = plan(kInference);
  const Result dry = xpuperf({"--root", root.path(), "run", "--dry-run", p}, dir.path(), podman_env(), 600);
  ASSERT_EQ(dry.code, 0) << dry.output;
  for (const char* part : {"[localhost] $ 'podman' 'build'", "'podman' 'run' '--detach'", "'--network' 'host'",
                           "'podman' 'exec'", "'podman' 'rm' '--force' '--time' '0'", "'infer' '--case' 'lenet5'"})
    EXPECT_TRUE(has(dry.output, part)) << part << "\n" << dry.output;
  EXPECT_FALSE(fs::exists(dir.path() + "/results")) << "a dry run starts nothing";

  const Result r = run(p);
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string node = node_dir();
  const json status = read_json(node + "/node_status.json");
  EXPECT_TRUE(has(status["container"]["image_prepared"], "built from " + root.path())) << status.dump();
  EXPECT_TRUE(status["container"]["removed"].get<bool>()) << status.dump();
  EXPECT_TRUE(has(status["container"]["name"], "-lenet5_infer-libtorch_CPU_1_1_1-r1-n0-")) << status.dump();
  EXPECT_TRUE(fs::exists(node + "/container_build.log"));
  const std::string log = test::read_file(node + "/rank0.out.log");
  EXPECT_TRUE(has(log, "sourced vendor env")) << log;
  EXPECT_TRUE(has(log, "\"event\":\"FINISHED\"")) << log;
  EXPECT_TRUE(fs::exists(node + "/lenet5.onnx")) << "the rank writes into the mounted node folder";
  // The plan as run keeps the container, so that --resume runs the same way.
  const std::string as_run = fs::path(node).parent_path().parent_path().parent_path().string() + "/plan.yaml";
  EXPECT_TRUE(has(test::read_file(as_run), "engine: podman")) << test::read_file(as_run);
  const Result check = xpuperf({"--root", root.path(), "check", as_run}, dir.path(), podman_env(), 600);
  EXPECT_EQ(check.code, 0) << check.output;
  EXPECT_FALSE(has(check.output, "warning")) << check.output;
  EXPECT_TRUE(leftover_containers(image).empty());
}

TEST_F(PodmanRun, ARecipeChangeRebuildsTheImage) {
  const std::string p = plan(kInference);
  ASSERT_EQ(run(p).code, 0);
  const std::string first = read_json(node_dir() + "/node_status.json")["container"]["image_prepared"];
  EXPECT_TRUE(has(first, "built from")) << first;
  clear_results();
  ASSERT_EQ(run(p).code, 0);
  const std::string second = read_json(node_dir() + "/node_status.json")["container"]["image_prepared"];
  EXPECT_TRUE(has(second, "up to date")) << second;
  clear_results();
  recipe("v2");
  ASSERT_EQ(run(p).code, 0);
  const std::string third = read_json(node_dir() + "/node_status.json")["container"]["image_prepared"];
  EXPECT_TRUE(has(third, "built from")) << third;
  EXPECT_TRUE(has(third, ", was ")) << third;
  const auto recipe_file = output_of({"podman", "run", "--rm", image, "cat", "/etc/xpuperf-recipe"});
  EXPECT_EQ(recipe_file.value_or(""), "v2\n");
  EXPECT_TRUE(leftover_containers(image).empty());
}

TEST_F(PodmanRun, AFailingRankAndATimeOutRemoveTheContainer) {
  root.write("vendors/cpu/training/lenet5-libtorch/config/environment_variables.sh",
             "echo \"vendor env says no\" >&2\nexit 3\n");
  const Result failed = run(plan("cases:\n  \"lenet5:libtorch:CPU:1:1:1\": /usr/share/datasets/fashion-mnist\n"));
  EXPECT_EQ(failed.code, 1) << failed.output;
  EXPECT_TRUE(has(failed.output, "rank 0 exited with code 3: vendor env says no")) << failed.output;
  EXPECT_TRUE(read_json(node_dir() + "/node_status.json")["container"]["removed"].get<bool>());
  EXPECT_TRUE(leftover_containers(image).empty());

  clear_results();
  fs::remove(root.path() + "/vendors/cpu/training/lenet5-libtorch/config/environment_variables.sh");
  const Result slow = run(
      plan("cases:\n  \"lenet5:libtorch:SLOW:1:1:1\": /usr/share/datasets/fashion-mnist\n", "case_time_limit: 4\n"));
  EXPECT_EQ(slow.code, 1) << slow.output;
  EXPECT_TRUE(has(slow.output, "timed_out")) << slow.output;
  EXPECT_TRUE(read_json(node_dir() + "/node_status.json")["container"]["removed"].get<bool>());
  EXPECT_TRUE(leftover_containers(image).empty());
}

TEST_F(PodmanRun, CtrlCRemovesTheContainer) {
  ProcessSpec spec;
  spec.argv = {XPUPERF_BINARY, "--root", root.path(), "run",
               plan("cases:\n  \"lenet5:libtorch:SLOW:1:1:1\": /usr/share/datasets/fashion-mnist\n")};
  spec.env = podman_env();
  spec.env["XPUPERF_HISTORY"] = dir.path() + "/history.db";
  spec.log_path = dir.path() + "/run.log";
  auto run = Process::start(spec);
  // Wait until the round's container runs, then press Ctrl-C.
  bool started = false;
  while (!started && run->running()) {
    started = !leftover_containers(image).empty();
    if (!started) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(started) << test::read_file(spec.log_path);
  ::kill(run->pid(), SIGINT);
  const ExitStatus status = run->wait();
  EXPECT_EQ(status.code, 130) << test::read_file(spec.log_path);
  const json node = read_json(node_dir() + "/node_status.json");
  EXPECT_EQ(node["exit_code"], 130) << node.dump();
  EXPECT_TRUE(node["container"]["removed"].get<bool>()) << node.dump();
  EXPECT_TRUE(leftover_containers(image).empty());
}

}  // namespace
}  // namespace xpuperf
