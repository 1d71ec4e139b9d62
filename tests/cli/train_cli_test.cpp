// `xpuperf train` end to end: real LeNet-5 training on Fashion-MNIST, and the errors a user can cause.

#include <gtest/gtest.h>
#include <signal.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_util.h"
#include "xpuperf/core/perflog.h"

namespace xpuperf {
namespace {

const char* kData = "/usr/share/datasets/fashion-mnist";

std::vector<std::string> train_args(std::vector<std::string> extra) {
  std::vector<std::string> args = {"train", "--case", "lenet5", "--vendor", "cpu", "--hardware", "CPU"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::optional<FinishedInfo> finished_of(const std::string& output) {
  std::istringstream in(output);
  for (const auto& e : parse_perflog(in).events)
    if (e.event == "FINISHED") return FinishedInfo::from_json(e.value);
  return std::nullopt;
}

class TrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(std::string(kData) + "/train-images-idx3-ubyte.gz"))
      GTEST_SKIP() << "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)";
  }
};

// The standard LeNet-5 recipe reaches its target on real Fashion-MNIST, over two data-parallel
// ranks (one rank's numbers are held step by step by the golden curves' lenet5_fp32 row, and
// `make run` trains it on one).
TEST_F(TrainCli, Lenet5ConvergesOnTwoProcesses) {
  const Result r =
      xpuperf(train_args({"--nproc", "2", "--data-dir", kData, "--set", "num_threads=1"}), XPUPERF_SOURCE_DIR, {}, 600);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto f = finished_of(r.output);  // rank 0's line, behind its "[rank 0] " prefix
  ASSERT_TRUE(f) << r.output;
  EXPECT_TRUE(*f->converged);
  EXPECT_GE(f->final_metric->value, 0.88);
  EXPECT_EQ(f->final_metric->name, "accuracy");
  EXPECT_EQ(f->extra["world_size"], 2);
  EXPECT_TRUE(has(r.output, "[rank 1] [PerfLog] {\"event\":\"INIT_END\"")) << r.output;
  EXPECT_TRUE(has(r.output, "2 ranks: CONVERGED")) << r.output;
}

TEST_F(TrainCli, MissingDataFolder) {
  const Result r = xpuperf(train_args({"--data-dir", "/no/such/data"}), XPUPERF_SOURCE_DIR);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "xpuperf: error: rank 0: data: data folder '/no/such/data' does not exist")) << r.output;
}

TEST_F(TrainCli, TruncatedDataFile) {
  test::TempDir dir;
  std::filesystem::copy(std::string(kData) + "/t10k-images-idx3-ubyte.gz", dir.path());
  std::filesystem::copy(std::string(kData) + "/t10k-labels-idx1-ubyte.gz", dir.path());
  std::filesystem::copy(std::string(kData) + "/train-labels-idx1-ubyte.gz", dir.path());
  // The first 100 kB of the training images: a download cut short.
  std::ifstream in(std::string(kData) + "/train-images-idx3-ubyte.gz", std::ios::binary);
  std::string head(100000, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  std::ofstream(dir.path() + "/train-images-idx3-ubyte.gz", std::ios::binary) << head;
  const Result r = xpuperf(train_args({"--data-dir", dir.path()}), XPUPERF_SOURCE_DIR);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "train-images-idx3-ubyte.gz: truncated")) << r.output;
}

TEST_F(TrainCli, DataThatIsNotFashionMnist) {
  test::TempDir dir;
  // Well-formed IDX files of 32x32 images: some other dataset.
  auto idx = [](std::vector<std::uint32_t> shape, std::size_t n) {
    std::string out = {0, 0, 0x08, static_cast<char>(shape.size())};
    for (auto d : shape)
      for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((d >> s) & 0xff));
    return out + std::string(n, '\1');
  };
  for (const char* split : {"train", "t10k"}) {
    dir.write(std::string(split) + "-images-idx3-ubyte", idx({4, 32, 32}, 4 * 32 * 32));
    dir.write(std::string(split) + "-labels-idx1-ubyte", idx({4}, 4));
  }
  const Result r = xpuperf(train_args({"--data-dir", dir.path()}), XPUPERF_SOURCE_DIR);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "images are 32x32, Fashion-MNIST's are 28x28")) << r.output;
}

TEST_F(TrainCli, UnknownSetKey) {
  const Result r = xpuperf(train_args({"--data-dir", kData, "--set", "lerning_rate=0.1"}), XPUPERF_SOURCE_DIR);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "--set lerning_rate=0.1: error: 'lerning_rate' is not a parameter of this case"))
      << r.output;
}

TEST_F(TrainCli, ASplitTheModelCannotMakeIsRefusedBeforeAnyRankStarts) {
  // ViT's three heads over two tensor-parallel ranks: the case's model declares its sizes, so the
  // config check names the key and the size, and no rank is started.
  const Result r =
      xpuperf({"train", "--case", "vit", "--vendor", "cpu", "--hardware", "CPU", "--nproc", "2", "--set",
               "synthetic_data=true", "--set", "hidden_dim=48", "--set", "num_heads=3", "--set", "tensor_parallel=2"},
              XPUPERF_SOURCE_DIR);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "'tensor_parallel' 2 does not divide the model's 3 attention heads (num_heads)"))
      << r.output;
  EXPECT_FALSE(has(r.output, "INIT_START")) << "no rank started: " << r.output;
}

TEST_F(TrainCli, ARankWithoutItsPeersTimesOutClearly) {
  // The message says the 2 s limit ended the wait; how long the whole command took under load is
  // not what is tested.
  const Result r = xpuperf(
      train_args({"--nproc", "2", "--data-dir", kData, "--set", "dist_timeout=2"}), XPUPERF_SOURCE_DIR,
      {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"}},
      300);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "rank 1 cannot reach the rendezvous store at 127.0.0.1:1 within 2 s")) << r.output;
}

TEST_F(TrainCli, SeveralNodesNeedALauncher) {
  const Result r = xpuperf(train_args({"--nnodes", "2", "--data-dir", kData}), XPUPERF_SOURCE_DIR);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "--nnodes 2 needs a launcher")) << r.output;
}

}  // namespace
}  // namespace xpuperf

namespace xpuperf {
namespace {

TEST(Crash, ARankKilledByASegmentationFaultSaysWhereBeforeItDies) {
  // A training run killed by a segmentation fault once it has started stands in for any crash. The
  // signal comes after the run's first PerfLog line, so after main() installed the crash report
  // (a fixed sleep sent it too soon on a busy machine).
  test::TempDir dir;
  ProcessSpec spec;
  spec.argv = {XPUPERF_BINARY, "--root", XPUPERF_SOURCE_DIR};
  for (const auto& a : train_args({"--set", "synthetic_data=true", "--set", "max_steps=1000000"}))
    spec.argv.push_back(a);
  spec.log_path = dir.path() + "/out.log";
  auto p = Process::start(spec);
  ASSERT_TRUE(wait_until(*p, [&] { return has(test::read_file(spec.log_path), "[PerfLog]"); }))
      << test::read_file(spec.log_path);
  ::kill(p->pid(), SIGSEGV);
  const ExitStatus status = p->wait(std::nullopt);
  EXPECT_FALSE(status.ok());
  const std::string out = test::read_file(spec.log_path);
  EXPECT_TRUE(has(out, "xpuperf: crashed: Segmentation fault\n  fault address ")) << out;
  EXPECT_TRUE(has(out, "  call stack (innermost first):\n")) << out;
}

}  // namespace
}  // namespace xpuperf
