// The vision training cases (resnet50, vit, mobilenetv2) as a user runs them on the CPU: through
// `xpuperf run` on real JPEGs (an ImageNet-layout folder made from Fashion-MNIST), with small
// images and a few dozen steps, the loss falling; a file that does not decode is skipped and
// counted; synthetic data is labelled so.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "cli_util.h"
#include "perflog_util.h"

namespace xpuperf {
namespace {
namespace fs = std::filesystem;

const char* kFashion = "/usr/share/datasets/fashion-mnist";

class VisionCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(std::string(kFashion) + "/train-images-idx3-ubyte.gz")) return;
    folder_ = new test::TempDir();
    const Result r = xpuperf({"data", "fashion-mnist", "-o", folder_->path() + "/jpeg", "--train-per-class", "100",
                              "--val-per-class", "20", "--size", "64"},
                             XPUPERF_SOURCE_DIR, {}, 600);
    ASSERT_EQ(r.code, 0) << r.output;
  }
  static void TearDownTestSuite() {
    delete folder_;
    folder_ = nullptr;
  }
  void SetUp() override {
    if (!folder_) GTEST_SKIP() << "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)";
  }
  static std::string jpegs() { return folder_->path() + "/jpeg"; }

  // `xpuperf train --case MODEL --vendor cpu --hardware CPU ARGS...` with each of `sets` as --set.
  static Result train_on_cpu(const std::string& model, std::vector<std::string> args,
                             const std::vector<std::string>& sets, double limit_s) {
    std::vector<std::string> all = {"train", "--case", model, "--vendor", "cpu", "--hardware", "CPU"};
    all.insert(all.end(), args.begin(), args.end());
    for (const auto& set : sets) all.insert(all.end(), {"--set", set});
    return xpuperf(all, XPUPERF_SOURCE_DIR, {}, limit_s);
  }

  // The small run of the README: 32-pixel images, ten classes, batches of 32, 40 steps; ViT-B/16's
  // layout at a test's size (2 blocks of width 64, 8-pixel patches: the full model is held to
  // torchvision's in models_test.cpp). Each case so runs in seconds on 2 cores.
  static std::string smoke_overrides(const std::string& model) {
    const char* lr = model == "resnet50" ? "0.002" : model == "mobilenetv2" ? "0.01" : "0.001";
    const std::string vit_sizes =
        model == "vit" ? ", patch_size: 8, num_layers: 2, hidden_dim: 64, num_heads: 2, mlp_dim: 128" : "";
    return std::string("{data_dir: ") + jpegs() +
           ", image_size: 32, resize_size: 32, train_batch_size: 32, num_classes: 10, max_steps: 40, "
           "warmup_epochs: 0, warmup_steps: 5, lr: " +
           lr + vit_sizes + ", log_freq: 1, eval_interval_epochs: 0, num_threads: 2, loader_threads: 2}";
  }

  static test::TempDir* folder_;
  test::TempDir dir;
};
test::TempDir* VisionCli::folder_ = nullptr;

// One case through `xpuperf run` (a test each, so that ctest runs them side by side): 40 steps with
// the loss falling, the data described, FLOPs counted.
void expect_trains_through_run(const std::string& model, const std::string& plan_dir, const std::string& overrides) {
  const std::string plan_path = plan_dir + "/plan.yaml";
  std::ofstream(plan_path) << "vendor: cpu\nlog_dir: " << plan_dir << "/results\ncases:\n  \"" << model
                           << ":libtorch:CPU:1:1:1\": " << overrides << "\n";
  const Result r = xpuperf({"run", plan_path}, XPUPERF_SOURCE_DIR, {}, 600);
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string run = run_folder_in(plan_dir + "/results");
  const std::string log = run + "/" + model + "_libtorch_CPU_1_1_1/round1/localhost_noderank0/rank0.out.log";
  const std::string text = test::read_file(log);
  const auto events = events_of(text);
  const auto losses = step_losses(events);
  ASSERT_EQ(losses.size(), 40u) << model << ": " << log;
  // Ten steps at each end, so one noisy batch does not decide.
  EXPECT_LT(mean(losses, 30, 40), mean(losses, 0, 10) - 0.05) << model;
  const auto* info = event_value(events, "SUBMIT_INFO");
  ASSERT_TRUE(info) << model;
  EXPECT_TRUE(has((*info)["train_data"].get<std::string>(), "ImageNet-layout train, 1000 images in 10 classes"))
      << info->dump();
  const auto* finished = event_value(events, "FINISHED");
  ASSERT_TRUE(finished) << model;
  EXPECT_EQ((*finished)["global_steps"], 40);
  EXPECT_GT((*finished)["train_flops_per_sample"].get<double>(), 0.0);
  // The overrides were warned about: the smoke run is not the standard case.
  EXPECT_TRUE(has(text, "'max_steps' is not a mutable parameter")) << model;
}

TEST_F(VisionCli, ResNet50TrainsThroughRunOnJpegsWithTheLossFalling) {
  expect_trains_through_run("resnet50", dir.path(), smoke_overrides("resnet50"));
}

TEST_F(VisionCli, MobileNetV2TrainsThroughRunOnJpegsWithTheLossFalling) {
  expect_trains_through_run("mobilenetv2", dir.path(), smoke_overrides("mobilenetv2"));
}

TEST_F(VisionCli, ViTTrainsThroughRunOnJpegsWithTheLossFalling) {
  expect_trains_through_run("vit", dir.path(), smoke_overrides("vit"));
}

TEST_F(VisionCli, AFileThatDoesNotDecodeIsSkippedCountedAndNamedOnce) {
  // A copy of the folder with one truncated JPEG and one text file named like a JPEG; 20 training
  // images a class are enough for two epochs that both meet them.
  const std::string data = dir.path() + "/jpeg";
  fs::copy(jpegs(), data, fs::copy_options::recursive);
  for (const auto& cls : fs::directory_iterator(data + "/train")) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(cls.path())) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (std::size_t i = 20; i < files.size(); ++i) fs::remove(files[i]);
  }
  std::string victim;
  for (const auto& e :
       fs::directory_iterator(data + "/train/" + fs::directory_iterator(data + "/train")->path().filename().string()))
    victim = e.path().string();
  fs::resize_file(victim, fs::file_size(victim) / 2);
  dir.write("jpeg/train/" + fs::path(victim).parent_path().filename().string() + "/notes.JPEG", "not an image\n");
  const Result r = train_on_cpu(
      "mobilenetv2", {"--data-dir", data},
      {"image_size=32", "resize_size=32", "num_classes=10", "max_epochs=2", "train_batch_size=50", "num_threads=2"},
      300);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto events = events_of(r.output);
  const auto* finished = event_value(events, "FINISHED");
  ASSERT_TRUE(finished) << r.output;
  EXPECT_EQ((*finished)["skipped_samples"], 2) << finished->dump();
  EXPECT_EQ((*finished)["epochs"], 2);
  // Named once, though both epochs met them.
  const auto count = [&](const std::string& part) {
    std::size_t n = 0;
    for (auto at = r.output.find(part); at != std::string::npos; at = r.output.find(part, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("skipping " + victim), 1u) << r.output;
  EXPECT_EQ(count("notes.JPEG:"), 1u) << r.output;
}

TEST_F(VisionCli, TwoRanksShareTheFolderAndAgreeOnTheMetrics) {
  const Result r = train_on_cpu("mobilenetv2", {"--nproc", "2", "--data-dir", jpegs()},
                                {"image_size=32", "resize_size=32", "num_classes=10", "max_steps=6", "num_threads=1",
                                 "loader_threads=1", "log_freq=2"},
                                300);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto events = events_of(r.output);
  const auto* finished = event_value(events, "FINISHED");
  ASSERT_TRUE(finished) << r.output;
  EXPECT_EQ((*finished)["world_size"], 2);
  EXPECT_EQ((*finished)["num_trained_samples"], 6 * 16 * 2);  // six steps of 16 images on each rank
  // The 200 validation images are split between the ranks and summed: top-1 is a multiple of 1/200.
  const double accuracy = (*finished)["final_metric"]["value"].get<double>();
  EXPECT_NEAR(accuracy * 200, std::round(accuracy * 200), 1e-9) << accuracy;
}

TEST_F(VisionCli, SyntheticDataIsLabelledAndClaimsNoData) {
  const Result r =
      train_on_cpu("resnet50", {},
                   {"synthetic_data=true", "image_size=32", "resize_size=32", "max_steps=2", "train_batch_size=4",
                    "synthetic_eval_samples=8", "eval_batch_size=8", "num_threads=2"},
                   120);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto events = events_of(r.output);
  const auto* info = event_value(events, "SUBMIT_INFO");
  ASSERT_TRUE(info) << r.output;
  EXPECT_TRUE(has((*info)["train_data"].get<std::string>(), "synthetic train")) << info->dump();
  EXPECT_TRUE(has((*info)["train_data"].get<std::string>(), "no accuracy")) << info->dump();
}

TEST_F(VisionCli, AMissingDataFolderSaysWhatToDo) {
  const Result r = xpuperf(
      {"train", "--case", "resnet50", "--vendor", "cpu", "--hardware", "CPU", "--data-dir", dir.path() + "/nowhere"},
      XPUPERF_SOURCE_DIR, {}, 600);
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(has(r.output, dir.path() + "/nowhere/train")) << r.output;
}

TEST_F(VisionCli, AJpegDecoderThatCannotRunHereIsRefusedWithTheAlternative) {
  const Result gpu = train_on_cpu("resnet50", {"--data-dir", jpegs()}, {"jpeg_decoder=nvjpeg"}, 60);
  EXPECT_NE(gpu.code, 0);
  EXPECT_TRUE(has(gpu.output, "jpeg_decoder: nvjpeg")) << gpu.output;
  EXPECT_TRUE(has(gpu.output, "use jpeg_decoder: cpu")) << gpu.output;
  const Result typo = train_on_cpu("resnet50", {"--data-dir", jpegs()}, {"jpeg_decoder=nvjpg"}, 60);
  EXPECT_NE(typo.code, 0);
  EXPECT_TRUE(has(typo.output, "'jpeg_decoder' must be one of auto, cpu, device, nvjpeg, got 'nvjpg'")) << typo.output;
  EXPECT_TRUE(has(typo.output, "did you mean 'nvjpeg'?")) << typo.output;
}

}  // namespace
}  // namespace xpuperf
