// `xpuperf infer` on lenet5 as a user runs it: the seven steps of FlagPerf's inference framework, each switch
// combination (compiler null, no_validation, exist_onnx_path, exist_compiler_path), the figures and the errors. Uses
// the real configs and Fashion-MNIST; one short training writes the checkpoint.

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
namespace fs = std::filesystem;

const std::string kRoot = XPUPERF_SOURCE_DIR;
const char* kData = "/usr/share/datasets/fashion-mnist";

struct Parsed {
  std::map<std::string, std::string> steps;  // step id → status
  json finished;
};

Parsed parse(const std::string& output) {
  Parsed p;
  std::istringstream in(output);
  for (const auto& e : parse_perflog(in).events) {
    if (e.event == "INFER_STEP") p.steps[e.value["step"]] = e.value["status"];
    if (e.event == perflog_event::kFinished) p.finished = e.value;
  }
  return p;
}

// ctest runs every test in a process of its own: the checkpoint one epoch of training writes is
// kept beside the binary, named by the binary's size and time, and made once for all of them (a
// race between two writers ends with either's complete file: each renames its own into place).
std::string lenet5_checkpoint() {
  const fs::path binary = XPUPERF_BINARY;
  const auto stamp = std::to_string(fs::file_size(binary)) + "-" +
                     std::to_string(fs::last_write_time(binary).time_since_epoch().count());
  const fs::path path = binary.parent_path() / ("infer-test-lenet5-" + stamp + ".pt");
  if (fs::exists(path)) return path.string();
  test::TempDir dir;
  const Result r =
      xpuperf({"--root", kRoot, "train", "--case", "lenet5", "--vendor", "cpu", "--hardware", "CPU", "--data-dir",
               kData, "--set", "max_epochs=1", "--set", "save_checkpoint=" + dir.path() + "/lenet5.pt"},
              kRoot, {}, 600);
  EXPECT_EQ(r.code, 0) << r.output;
  std::error_code ec;
  fs::copy_file(dir.path() + "/lenet5.pt", path.string() + ".partial-" + std::to_string(::getpid()), ec);
  if (!ec) fs::rename(path.string() + ".partial-" + std::to_string(::getpid()), path, ec);
  return fs::exists(path) ? path.string() : "";
}

class InferCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(std::string(kData) + "/t10k-images-idx3-ubyte.gz"))
      GTEST_SKIP() << "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)";
  }
  static std::string checkpoint() {
    static const std::string path = lenet5_checkpoint();
    EXPECT_FALSE(path.empty()) << "the lenet5 checkpoint could not be made";
    return path;
  }
  Result infer(std::vector<std::string> sets) {
    std::vector<std::string> args = {"--root", kRoot,   "infer",    "--case", "lenet5:libtorch",   "--data-dir",
                                     kData,    "--out", out.path(), "--set",  "latency_queries=50"};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    return xpuperf(args, kRoot, {}, 600);
  }
  test::TempDir out;
};

TEST_F(InferCli, StandardPathRunsEveryStepAndBothPathsAgree) {
  const Result r = infer({"checkpoint=" + checkpoint()});
  ASSERT_EQ(r.code, 0) << r.output;
  const Parsed p = parse(r.output);
  EXPECT_EQ(p.steps.size(), 7u) << r.output;
  for (const char* s : {"a_config", "b_data_model", "c_validation", "e_compile", "f_inference", "g_results"})
    EXPECT_EQ(p.steps.at(s).rfind("ran", 0), 0u) << s << ": " << p.steps.at(s);
  EXPECT_EQ(p.steps.at("d_export"), "ran: " + out.path() + "/lenet5.onnx");
  EXPECT_TRUE(fs::exists(out.path() + "/lenet5.onnx"));
  const json& f = p.finished;
  EXPECT_EQ(f["samples"], 10000.0);
  EXPECT_GT(f["validation_accuracy"].get<double>(), 0.8);  // one epoch of training
  EXPECT_DOUBLE_EQ(f["validation_accuracy"].get<double>(), f["inference_accuracy"].get<double>());
  for (const char* k : {"validation_whole", "validation_core", "inference_whole", "inference_core"})
    EXPECT_GT(f[k].get<double>(), 0.0) << k;
  EXPECT_GE(f["validation_core"].get<double>(), f["validation_whole"].get<double>());  // core excludes loading
  EXPECT_EQ(f["latency"][0]["batch_size"], 1);
  EXPECT_EQ(f["latency"][0]["queries"], 50);
  EXPECT_LE(f["latency"][0]["p50_ms"].get<double>(), f["latency"][0]["p99_ms"].get<double>());
  EXPECT_FALSE(f["foo_time_flagged"].get<bool>());
  EXPECT_FALSE(f.contains("caveat"));
  EXPECT_TRUE(has(r.output, "| inference_core (items/s) |")) << r.output;
}

TEST_F(InferCli, CompilerNullRunsValidationOnly) {
  const Result r = infer({"checkpoint=" + checkpoint(), "compiler=null"});
  ASSERT_EQ(r.code, 0) << r.output;
  const Parsed p = parse(r.output);
  EXPECT_EQ(p.steps.at("e_compile"), "skipped: compiler null");
  EXPECT_EQ(p.steps.at("f_inference"), "skipped: compiler null");
  EXPECT_TRUE(p.finished["inference_core"].is_null());
  EXPECT_GT(p.finished["validation_core"].get<double>(), 0.0);
}

TEST_F(InferCli, NoValidationNeedsAnOnnxPath) {
  const Result r = infer({"no_validation=true"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "no_validation: true (--set no_validation=true) needs exist_onnx_path")) << r.output;
}

TEST_F(InferCli, NoValidationWithGivenFilesGoesStraightToInference) {
  const Result r = infer({"no_validation=true", "exist_onnx_path=foo", "exist_compiler_path=" + checkpoint()});
  ASSERT_EQ(r.code, 0) << r.output;
  const Parsed p = parse(r.output);
  EXPECT_EQ(p.steps.at("c_validation"), "skipped: no_validation");
  EXPECT_TRUE(has(p.steps.at("d_export"), "skipped")) << p.steps.at("d_export");
  EXPECT_TRUE(has(p.steps.at("e_compile"), "skipped: exist_compiler_path")) << p.steps.at("e_compile");
  EXPECT_EQ(p.steps.at("f_inference"), "ran");
  EXPECT_TRUE(p.finished["validation_core"].is_null());
  EXPECT_GT(p.finished["inference_accuracy"].get<double>(), 0.8);
}

TEST_F(InferCli, GivenOnnxPathSkipsExportOnly) {
  const Result r = infer({"checkpoint=" + checkpoint(), "exist_onnx_path=/somewhere/model.onnx"});
  ASSERT_EQ(r.code, 0) << r.output;
  const Parsed p = parse(r.output);
  EXPECT_EQ(p.steps.at("d_export"), "skipped: exist_onnx_path /somewhere/model.onnx");
  EXPECT_EQ(p.steps.at("c_validation"), "ran");
  EXPECT_EQ(p.steps.at("f_inference"), "ran");
}

TEST_F(InferCli, Bf16OnTheCpuKeepsTheAccuracy) {
  const Result r = infer({"checkpoint=" + checkpoint(), "fp16=true"});
  ASSERT_EQ(r.code, 0) << r.output;
  const json& f = parse(r.output).finished;
  EXPECT_TRUE(has(f["engine"].get<std::string>(), "bfloat16")) << f.dump();
  EXPECT_NEAR(f["inference_accuracy"].get<double>(), f["validation_accuracy"].get<double>(), 0.01);
}

TEST_F(InferCli, ProfileBatchesTimeEachOperatorOfTheEngine) {
  const Result r = infer({"checkpoint=" + checkpoint(), "profile_batches=2"});
  ASSERT_EQ(r.code, 0) << r.output;
  const Parsed p = parse(r.output);
  const json& profile = p.finished["op_profile"];
  EXPECT_EQ(profile["batches"], 2);
  EXPECT_EQ(profile["batch_size"], 256);
  EXPECT_EQ(profile["timing"], "wall clock");
  ASSERT_GE(profile["operators"].size(), 3u) << profile.dump();
  double share = 0;
  bool convolution = false;
  for (const auto& op : profile["operators"]) {
    EXPECT_EQ(op["name"].get<std::string>().rfind("aten::", 0), 0u) << op.dump();
    EXPECT_LE(op["self_ms"].get<double>(), op["total_ms"].get<double>() + 1e-9) << op.dump();
    share += op["self_share"].get<double>();
    convolution = convolution || has(op["name"].get<std::string>(), "conv");
  }
  EXPECT_LE(share, 1.0 + 1e-9);
  EXPECT_TRUE(convolution) << profile.dump();
  EXPECT_TRUE(has(r.output, "ATen operators of 2 batch(es) of 256 through libtorch eager")) << r.output;
  EXPECT_TRUE(has(r.output, "| operator | calls | self ms | share | total ms |")) << r.output;
}

TEST_F(InferCli, ExportedOnnxRunInOpenCvMatchesLibTorch) {
  const Result r = infer({"checkpoint=" + checkpoint(), "compiler=opencv"});
  ASSERT_EQ(r.code, 0) << r.output;
  const json& f = parse(r.output).finished;
  EXPECT_TRUE(has(f["engine"].get<std::string>(), "opencv dnn")) << f.dump();
  EXPECT_LT(f["max_abs_diff_vs_validation"].get<double>(), 1e-4) << f.dump();
  EXPECT_NEAR(f["inference_accuracy"].get<double>(), f["validation_accuracy"].get<double>(), 1e-3);

  // The adapted-case path of FlagPerf's inference framework: no model, the ONNX file given, straight to the engine.
  const std::string onnx = out.path() + "/given.onnx";
  fs::copy_file(out.path() + "/lenet5.onnx", onnx);
  const Result given = infer({"compiler=opencv", "no_validation=true", "exist_onnx_path=" + onnx});
  ASSERT_EQ(given.code, 0) << given.output;
  const Parsed p = parse(given.output);
  EXPECT_EQ(p.steps.at("d_export"), "skipped: no_validation (no model to export)");
  EXPECT_TRUE(has(p.steps.at("e_compile"), "ran: opencv dnn")) << p.steps.at("e_compile");
  EXPECT_GT(p.finished["inference_accuracy"].get<double>(), 0.8);

  const std::string bad = out.path() + "/bad.onnx";
  std::ofstream(bad) << "not a model";
  const Result broken = infer({"compiler=opencv", "no_validation=true", "exist_onnx_path=" + bad});
  EXPECT_EQ(broken.code, 1);
  EXPECT_TRUE(has(broken.output, "OpenCV cannot read " + bad)) << broken.output;
}

TEST_F(InferCli, LibTorchGraphOnTheCpuRunsTheFoldedEagerPath) {
  const Result r = infer({"checkpoint=" + checkpoint(), "compiler=libtorch-graph"});
  ASSERT_EQ(r.code, 0) << r.output;
  const json& f = parse(r.output).finished;
  const std::string engine = f["engine"];
  EXPECT_TRUE(has(engine, "libtorch-graph, float32, cpu, 0 blocks with batch norm folded, channels-last")) << engine;
  EXPECT_TRUE(has(engine, "eager (graphs need a device whose vendor brings them")) << engine;
  EXPECT_LT(f["relative_diff_vs_validation"].get<double>(), 1e-5) << f.dump();
  EXPECT_GE(f["top1_agreement_vs_validation"].get<double>(), 0.99) << f.dump();
  EXPECT_NEAR(f["inference_accuracy"].get<double>(), f["validation_accuracy"].get<double>(), 1e-3);
}

// Python-made files: a state_dict and a TorchScript trace of a LeNet-5 written in Python.
bool have_python_torch() {
  return run_ok({"/usr/bin/python3", "-c", "import torch"}, {}, 600);
}

TEST_F(InferCli, PythonStateDictAndTorchScriptMatchTheCheckpoint) {
  if (!have_python_torch()) GTEST_SKIP() << "Debian's python3-torch is not installed";
  ASSERT_TRUE(
      run_ok({"/usr/bin/python3", kRoot + "/tests/cli/make_lenet5_torchscript.py", checkpoint(), out.path()}, {}, 120));
  const Result archive = infer({"checkpoint=" + checkpoint(), "compiler=null"});
  ASSERT_EQ(archive.code, 0) << archive.output;
  const Result dict = infer({"checkpoint=" + out.path() + "/dict.pth", "compiler=null"});
  ASSERT_EQ(dict.code, 0) << dict.output;
  EXPECT_EQ(parse(dict.output).finished["validation_accuracy"], parse(archive.output).finished["validation_accuracy"]);

  const Result ordered = infer({"checkpoint=" + out.path() + "/ordered.pth"});
  EXPECT_EQ(ordered.code, 1);
  EXPECT_TRUE(has(ordered.output, "save a plain dict instead: torch.save(dict(model.state_dict()), F)"))
      << ordered.output;

  const Result ts =
      infer({"checkpoint=" + checkpoint(), "compiler=torchscript", "exist_compiler_path=" + out.path() + "/ts.pt"});
  ASSERT_EQ(ts.code, 0) << ts.output;
  const Parsed p = parse(ts.output);
  EXPECT_TRUE(has(p.steps.at("e_compile"), "skipped: exist_compiler_path")) << p.steps.at("e_compile");
  EXPECT_TRUE(has(p.finished["engine"], "torchscript, float32, cpu, frozen")) << p.finished.dump();
  EXPECT_LT(p.finished["relative_diff_vs_validation"].get<double>(), 1e-5) << p.finished.dump();
  EXPECT_NEAR(p.finished["inference_accuracy"].get<double>(), p.finished["validation_accuracy"].get<double>(), 1e-3);

  const Result none = infer({"compiler=torchscript"});
  EXPECT_EQ(none.code, 1);
  EXPECT_TRUE(has(none.output, "engine torchscript runs a TorchScript file: set exist_compiler_path")) << none.output;
}

Result resnet50(const std::string& out_dir, std::vector<std::string> sets) {
  std::vector<std::string> args = {"--root",     kRoot,   "infer",        "--case", "resnet50",
                                   "--vendor",   "cpu",   "--out",        out_dir,  "--set",
                                   "fp16=false", "--set", "batch_size=4", "--set",  "latency_queries=3"};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  return xpuperf(args, kRoot, {}, 600);
}

TEST(InferResNet50, FoldedGraphAndOnnxMatchTheModelWithTorchvisionNames) {
  if (!have_python_torch()) GTEST_SKIP() << "Debian's python3-torch is not installed";
  test::TempDir dir;
  const std::string weights = dir.path() + "/resnet50.pth";
  ASSERT_TRUE(run_ok({"/usr/bin/python3", kRoot + "/tests/cli/make_resnet50_state_dict.py", weights}, {}, 120));
  for (const char* engine : {"libtorch-graph", "opencv"}) {
    const Result r = resnet50(dir.path(), {"synthetic_data=true", "synthetic_samples=6", "checkpoint=" + weights,
                                           std::string("compiler=") + engine});
    ASSERT_EQ(r.code, 0) << r.output;
    const Parsed p = parse(r.output);
    EXPECT_EQ(p.finished["samples"], 6.0);
    EXPECT_EQ(p.finished["metric"], "top1_accuracy");
    EXPECT_TRUE(has(p.finished["caveat"], "synthetic images")) << p.finished.dump();
    EXPECT_LT(p.finished["relative_diff_vs_validation"].get<double>(), 1e-5) << engine << p.finished.dump();
    EXPECT_EQ(p.finished["top1_agreement_vs_validation"], 1.0) << engine;
    if (std::string(engine) == "libtorch-graph") {
      EXPECT_TRUE(has(p.finished["engine"], "17 blocks with batch norm folded")) << p.finished.dump();
    }
  }
  EXPECT_TRUE(fs::exists(dir.path() + "/resnet50.onnx"));
}

// ViT-L/16's layout at a small size: every engine that runs the case's model agrees with its
// validation, and the FLOPs follow the sizes.
TEST(InferVitL16, SmallSizesRunThroughTheEnginesAndMatchValidation) {
  test::TempDir dir;
  for (const char* engine : {"libtorch", "libtorch-graph"}) {
    SCOPED_TRACE(engine);
    const Result r = xpuperf({"--root",
                              kRoot,
                              "infer",
                              "--case",
                              "vit_l_16",
                              "--vendor",
                              "cpu",
                              "--out",
                              dir.path(),
                              "--set",
                              "synthetic_data=true",
                              "--set",
                              "synthetic_samples=6",
                              "--set",
                              "batch_size=4",
                              "--set",
                              "fp16=false",
                              "--set",
                              "latency_queries=3",
                              "--set",
                              "image_size=32",
                              "--set",
                              "num_layers=2",
                              "--set",
                              "hidden_dim=64",
                              "--set",
                              "num_heads=4",
                              "--set",
                              "mlp_dim=128",
                              "--set",
                              std::string("compiler=") + engine},
                             kRoot, {}, 600);
    ASSERT_EQ(r.code, 0) << r.output;
    const Parsed p = parse(r.output);
    EXPECT_EQ(p.finished["samples"], 6.0);
    EXPECT_EQ(p.finished["metric"], "top1_accuracy");
    EXPECT_TRUE(has(p.finished["caveat"], "random weights")) << p.finished.dump();
    EXPECT_TRUE(has(p.finished["caveat"], "synthetic images")) << p.finished.dump();
    EXPECT_LT(p.finished["relative_diff_vs_validation"].get<double>(), 1e-5) << p.finished.dump();
    EXPECT_EQ(p.finished["top1_agreement_vs_validation"], 1.0);
    EXPECT_TRUE(has(p.steps.at("b_data_model"), "random 32x32 images")) << p.steps.at("b_data_model");
  }
  const Result bad = xpuperf({"--root", kRoot, "infer", "--case", "vit_l_16", "--vendor", "cpu", "--out", dir.path(),
                              "--set", "synthetic_data=true", "--set", "image_size=30"},
                             kRoot, {}, 600);
  EXPECT_EQ(bad.code, 1);
  EXPECT_TRUE(has(bad.output, "image_size 30 (a multiple of patch_size 16)")) << bad.output;
}

// A 24-bit BMP of one colour, which OpenCV decodes like any ImageNet JPEG.
void write_bmp(const std::string& path, int width, int height, unsigned char shade) {
  const int row = (width * 3 + 3) / 4 * 4;
  const std::uint32_t size = 54 + static_cast<std::uint32_t>(row * height);
  std::string h(54, '\0');
  auto put = [&](int at, std::uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) h[static_cast<std::size_t>(at + i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  h[0] = 'B', h[1] = 'M';
  put(2, size, 4), put(10, 54, 4), put(14, 40, 4), put(18, static_cast<std::uint32_t>(width), 4);
  put(22, static_cast<std::uint32_t>(height), 4), put(26, 1, 2), put(28, 24, 2);
  std::ofstream out(path, std::ios::binary);
  out << h << std::string(static_cast<std::size_t>(row * height), static_cast<char>(shade));
}

TEST(InferResNet50, ReadsAnImageNetStyleFolder) {
  test::TempDir dir;
  for (const char* cls : {"n02", "n01"}) {
    fs::create_directories(dir.path() + "/val/" + cls);
    write_bmp(dir.path() + "/val/" + cls + "/a.bmp", 300, 200, 40);
    write_bmp(dir.path() + "/val/" + cls + "/b.BMP", 64, 48, 200);  // smaller than the crop: scaled up
  }
  const Result r = resnet50(dir.path(), {"data_dir=" + dir.path() + "/val", "compiler=null", "num_workers=2"});
  ASSERT_EQ(r.code, 0) << r.output;
  const Parsed p = parse(r.output);
  EXPECT_EQ(p.finished["samples"], 4.0);
  EXPECT_TRUE(has(p.steps.at("b_data_model"), "4 images, 2 classes")) << p.steps.at("b_data_model");
  EXPECT_TRUE(has(p.finished["caveat"], "random weights")) << p.finished.dump();

  fs::create_directories(dir.path() + "/val/n03");
  const Result empty = resnet50(dir.path(), {"data_dir=" + dir.path() + "/val", "compiler=null"});
  EXPECT_EQ(empty.code, 1);
  EXPECT_TRUE(has(empty.output, "class folder '" + dir.path() + "/val/n03' has no images")) << empty.output;
  const Result none = resnet50(dir.path(), {"compiler=null"});
  EXPECT_EQ(none.code, 1);
  EXPECT_TRUE(has(none.output, "resnet50 needs data_dir")) << none.output;
}

TEST_F(InferCli, TheExportReplacesASymlinkAndNeverWritesThroughIt) {
  const std::string sentinel = out.write("sentinel.txt", "not to be overwritten\n");
  fs::create_symlink(sentinel, out.path() + "/lenet5.onnx");
  const Result r = infer({"checkpoint=" + checkpoint(), "compiler=null", "latency_batch_sizes=[]"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(test::read_file(sentinel), "not to be overwritten\n");
  EXPECT_FALSE(fs::is_symlink(out.path() + "/lenet5.onnx"));
  EXPECT_GT(fs::file_size(out.path() + "/lenet5.onnx"), 1000u);
}

TEST_F(InferCli, NoLatencyQueriesIsRefusedNotReportedAsZero) {
  const Result r = infer({"checkpoint=" + checkpoint(), "latency_queries=0"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "latency_queries must be 1 or more, got 0")) << r.output;
  EXPECT_FALSE(has(r.output, "0.000")) << r.output;
}

TEST_F(InferCli, ErrorsNameTheKeyAndWhatToDo) {
  const Result engine = infer({"compiler=tensorrt-nope"});
  EXPECT_EQ(engine.code, 1);
  EXPECT_TRUE(has(engine.output, "compiler 'tensorrt-nope'")) << engine.output;
  EXPECT_TRUE(has(engine.output, "libtorch, libtorch-graph, opencv, torchscript")) << engine.output;
  const Result missing = infer({"checkpoint=/nope/lenet5.pt"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(has(missing.output, "checkpoint '/nope/lenet5.pt' does not exist")) << missing.output;
  const Result key = infer({"batchsize=3"});
  EXPECT_EQ(key.code, 1);
  EXPECT_TRUE(has(key.output, "did you mean 'batch_size'")) << key.output;
  const Result random = infer({});
  EXPECT_EQ(random.code, 0) << random.output;
  EXPECT_TRUE(has(parse(random.output).finished.value("caveat", ""), "random weights")) << random.output;
}

TEST_F(InferCli, PlanRunsInferenceRoundsIntoTheSummary) {
  test::TempDir dir;
  const std::string plan =
      dir.write("plan.yaml", "vendor: cpu\nlog_dir: " + dir.path() +
                                 "/results\ninference:\n  \"lenet5:libtorch:CPU:2\": {data_dir: " + kData +
                                 ", checkpoint: " + checkpoint() + ", compiler: opencv, latency_queries: 20}\n");
  const Result r = xpuperf({"--root", kRoot, "run", plan}, dir.path(), {}, 600);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "lenet5:libtorch:CPU:2 round 2/2 ... ok: inference_core")) << r.output;
  const std::string run = run_folder_in(dir.path() + "/results");
  std::ifstream in(run + "/summary.json");
  const json s = json::parse(in);
  ASSERT_EQ(s["cases"].size(), 1u);
  const json& c = s["cases"][0];
  EXPECT_EQ(c["case"], "lenet5:libtorch:CPU:2");
  EXPECT_EQ(c["family"], "inference");
  EXPECT_EQ(c["aggregate"]["inference_core"]["n"], 2);
  EXPECT_GT(c["aggregate"]["inference_accuracy"]["median"].get<double>(), 0.8);
  // The exported model stays in the round's node folder.
  EXPECT_TRUE(fs::exists(run + "/lenet5_infer-libtorch_CPU_1_1_2/round1/localhost_noderank0/lenet5.onnx"));
  const std::string md = test::read_file(run + "/summary.md");
  EXPECT_TRUE(has(md, "| lenet5:libtorch:CPU:2 | 2 / 2 |")) << md;
  const Result again = xpuperf({"--root", kRoot, "check", run + "/plan.yaml"}, dir.path());
  EXPECT_EQ(again.code, 0) << again.output;
  EXPECT_TRUE(has(again.output, "inference lenet5:libtorch:CPU:2")) << again.output;
}

// The llm case at a tiny size: a decoder of 2 layers, prefill through the engines, then decoding
// and LoadGen's scenarios run for a fraction of a second (so never valid by LoadGen's rules).
const std::vector<std::string> kTinyLlm = {"vocab_size=97",
                                           "hidden_size=32",
                                           "intermediate_size=48",
                                           "num_hidden_layers=2",
                                           "num_attention_heads=4",
                                           "num_key_value_heads=2",
                                           "max_position_embeddings=64",
                                           "seq_length=16",
                                           "prefill_samples=8",
                                           "batch_size=4",
                                           "latency_queries=3",
                                           "decode_batch_sizes=[1,4]",
                                           "decode_prompt_tokens=8",
                                           "decode_output_tokens=6",
                                           "max_batch=4",
                                           "max_seq_len=64",
                                           "length_bucket=16",
                                           "prompt_tokens=[4,12]",
                                           "output_tokens=[2,8]",
                                           "offline_queries=12",
                                           "server_load=[0.3,0.6]",
                                           "server_min_duration_s=0.3",
                                           "server_min_queries=10",
                                           "sweep_lengths=[[8,4]]",
                                           "max_concurrency=4",
                                           "sweep_queries=6",
                                           "block_size=4",
                                           "max_num_batched_tokens=16",
                                           "gpu_hour_cost=2.5"};

Result llm(const std::string& out_dir, std::vector<std::string> sets) {
  std::vector<std::string> args = {"--root", kRoot, "infer", "--case", "llm", "--vendor", "cpu", "--out", out_dir};
  for (const auto& s : kTinyLlm) args.insert(args.end(), {"--set", s});
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  return xpuperf(args, kRoot, {}, 600);
}

TEST(InferLlm, LlamaAndGptPrefillDecodeAndServeWithSyntheticWeightsSaidSo) {
  test::TempDir dir;
  for (const char* architecture : {"llama", "gpt2"}) {
    SCOPED_TRACE(architecture);
    // fused_kernels asked for: on the CPU ATen's operators run, and the record says so.
    const Result r =
        llm(dir.path(), {std::string("architecture=") + architecture, "compiler=libtorch-graph", "fused_kernels=true"});
    ASSERT_EQ(r.code, 0) << r.output;
    const Parsed p = parse(r.output);
    EXPECT_EQ(p.finished["samples"], 8.0);
    EXPECT_EQ(p.finished["metric"], "next_token_accuracy");
    EXPECT_TRUE(has(p.finished["caveat"], "synthetic weights")) << p.finished.dump();
    EXPECT_LT(p.finished["relative_diff_vs_validation"].get<double>(), 1e-2) << p.finished.dump();
    EXPECT_TRUE(has(p.steps.at("h_generation"), "ran: KV cache contiguous and preallocated: 4 slots x 64 tokens"))
        << p.steps.at("h_generation");
    const json& g = p.finished["generation"];
    EXPECT_EQ(g["prefill_tokens_per_sample"], 16);
    EXPECT_EQ(g["fused_kernels"], false);
    ASSERT_EQ(g["decode"].size(), 4u);  // batch 1 and 4, greedy and sampled
    for (const auto& d : g["decode"]) {
      EXPECT_GT(d["tpot_ms"].get<double>(), 0) << d.dump();
      EXPECT_GT(d["bandwidth_bound_ms"].get<double>(), 0) << d.dump();
    }
    EXPECT_EQ(g["decode"][1]["sampling"], "temperature 0.80, top-k 50");
    EXPECT_EQ(g["offline"]["queries"], 12);
    EXPECT_GT(g["offline"]["output_tokens_per_second"].get<double>(), 0);
    ASSERT_EQ(g["server"].size(), 2u);
    for (const auto& run : g["server"]) {
      EXPECT_GE(run["queries"].get<int>(), 10);
      EXPECT_FALSE(run["valid"].get<bool>());
      EXPECT_TRUE(has(run["invalid_because"][0], "under the minimum duration of 600 s (LoadGen's)")) << run.dump();
      EXPECT_GT(run["ttft_ms"]["p99"].get<double>(), 0);
    }
    EXPECT_NEAR(g["server"][1]["target_rate"].get<double>(), 0.6 * g["offline"]["queries_per_second"].get<double>(),
                1e-9);
    EXPECT_TRUE(g["rules"].contains("weaker_than_loadgen"));
    EXPECT_TRUE(has(r.output, "| decode batch | sampling | TTFT (ms) |")) << r.output;
    EXPECT_TRUE(has(r.output, "highest Server rate within the bounds")) << r.output;
    // The serving sweep on the paged engine: concurrency 1, 2, 4, each point's figures.
    const json& sweep = g["sweep"];
    ASSERT_EQ(sweep["points"].size(), 3u) << sweep.dump();
    for (const auto& point : sweep["points"]) {
      EXPECT_TRUE(point["ok"].get<bool>()) << point.dump();
      EXPECT_EQ(point["queries"], 6);
      EXPECT_GT(point["output_tokens_per_second_per_gpu"].get<double>(), 0);
      EXPECT_GT(point["tokens_per_second_per_user"].get<double>(), 0);
      EXPECT_LE(point["ttft_ms"]["p50"].get<double>(), point["ttft_ms"]["p99"].get<double>());
      EXPECT_GT(point["host_share_of_step"].get<double>(), 0);
      EXPECT_GT(point["decode_steps"].get<int>(), 0);
      EXPECT_GT(point["mean_decode_step_ms"].get<double>(), 0);
      EXPECT_EQ(point["graph_steps"], 0) << "no device graphs on the CPU";
      EXPECT_FALSE(point.contains("profile")) << "no profile_batches";
      EXPECT_NEAR(point["cost_per_million_output_tokens"].get<double>(),
                  2.5 / 3600 / point["output_tokens_per_second_per_gpu"].get<double>() * 1e6, 1e-9);
    }
    EXPECT_EQ(sweep["points"][2]["concurrency"], 4);
    EXPECT_EQ(sweep["pool"]["block_size"], 4);
    EXPECT_TRUE(has(sweep["engine"], "decode steps eager, unpadded")) << sweep.dump();
    EXPECT_TRUE(has(sweep["pool"]["sized_by"], "the device reports no free memory")) << sweep.dump();
    EXPECT_TRUE(has(r.output, "| in / out | concurrency | output tokens/s per GPU |")) << r.output;
    EXPECT_TRUE(has(r.output, "the user's own figure")) << r.output;
  }
}

// An empty decode_batch_sizes leaves the static decode run out, and says so rather than dropping it silently.
TEST(InferLlm, NoDecodeBatchSizesIsSaidNotSilent) {
  test::TempDir dir;
  const Result r = llm(dir.path(), {"decode_batch_sizes=[]", "offline_queries=0"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "decode_batch_sizes: [] leaves out the static decode run")) << r.output;
}

TEST(InferLlm, SettingsThatCannotRunNameTheirKey) {
  test::TempDir dir;
  const auto error_of = [&](const std::string& set) {
    const Result r = llm(dir.path(), {set});
    EXPECT_EQ(r.code, 1) << set << "\n" << r.output;
    return r.output;
  };
  EXPECT_TRUE(has(error_of("architecture=mamba"), "architecture: 'mamba' is not llama or gpt2"));
  EXPECT_TRUE(has(error_of("output_tokens=[2,60]"), "exceed max_seq_len 64"));
  EXPECT_TRUE(has(error_of("decode_batch_sizes=[8]"), "is not a batch size in 1..max_batch (4)"));
  EXPECT_TRUE(has(error_of("num_key_value_heads=3"), "num_key_value_heads 3"));
  EXPECT_TRUE(has(error_of("max_concurrency=0"), "max_concurrency: 0: give 1 or more"));
  EXPECT_TRUE(has(error_of("gpu_hour_cost=-1"), "gpu_hour_cost: -1.00 is negative"));
  EXPECT_TRUE(has(error_of("sweep_lengths=[[60,10]]"), "sweep_lengths: [60, 10] passes the model's 64 positions"));
  EXPECT_TRUE(has(error_of("sweep_lengths=[[8]]"), "sweep_lengths: a list of [input, output] token pairs"));
  const std::string too_long = dir.write("long.csv", "8,4\n40,30\n");
  EXPECT_TRUE(has(error_of("lengths_file=" + too_long),
                  "lengths_file: " + too_long + ":2: 40 + 30 tokens exceed max_seq_len 64"));
  EXPECT_TRUE(has(error_of("lengths_file=" + dir.path() + "/none.csv"), "cannot read the lengths file"));
}

TEST(InferLlm, ServingLengthsComeFromAFileWhenGiven) {
  test::TempDir dir;
  const std::string file = dir.write("trace.csv", "prompt_tokens,output_tokens\n5,3\n9,2\n");
  const Result r = llm(dir.path(), {"lengths_file=" + file, "server_load=[0.5]", "decode_batch_sizes=[1]"});
  ASSERT_EQ(r.code, 0) << r.output;
  const Parsed p = parse(r.output);
  const json& rules = p.finished["generation"]["rules"];
  EXPECT_EQ(rules["lengths"], "2 (prompt, output) pairs from " + file) << rules.dump();
  EXPECT_FALSE(rules.contains("prompt_tokens"));
  // The serving sweep runs the trace too: each query's pair drawn from the file's.
  const json& points = p.finished["generation"]["sweep"]["points"];
  ASSERT_EQ(points.size(), 6u) << "3 concurrencies of the pair [8, 4], then of the trace";
  EXPECT_EQ(points[3]["lengths"], "trace " + file);
  EXPECT_TRUE(points[5]["ok"].get<bool>()) << points[5].dump();
  const auto total = points[5]["output_tokens_total"].get<std::int64_t>();
  EXPECT_GE(total, 6 * 2);
  EXPECT_LE(total, 6 * 3);
  EXPECT_NE(total, 6 * 3) << "both pairs drawn (seeded), not the first alone";
}

TEST(InferLlm, ProfileBatchesTimeThePrefillsAndTheDecodeStepsOperators) {
  test::TempDir dir;
  const Result r =
      llm(dir.path(), {"compiler=libtorch", "profile_batches=3", "offline_queries=0", "decode_batch_sizes=[2,4]"});
  ASSERT_EQ(r.code, 0) << r.output;
  const Parsed p = parse(r.output);
  EXPECT_EQ(p.finished["op_profile"]["batches"], 3);
  const json& decode = p.finished["generation"]["decode_op_profile"];
  EXPECT_EQ(decode["steps"], 3);
  EXPECT_EQ(decode["batch_size"], 2);  // the first decode batch size
  bool matmul = false;
  for (const auto& op : decode["operators"]) matmul = matmul || has(op["name"].get<std::string>(), "mm");
  EXPECT_TRUE(matmul) << decode.dump();
  EXPECT_TRUE(has(r.output, "ATen operators of 3 decode step(s) of batch 2 without device graphs")) << r.output;
  // The sweep's highest concurrency would be profiled by device kernel: the CPU has none, said so.
  const json& points = p.finished["generation"]["sweep"]["points"];
  ASSERT_EQ(points.size(), 3u);
  EXPECT_FALSE(points[1].contains("profile"));
  EXPECT_EQ(points[2]["profile"]["error"], "the CPU runs no device kernels to time") << points[2].dump();
  EXPECT_TRUE(has(r.output, "no kernel profile: the CPU runs no device kernels to time")) << r.output;
}

TEST(InferLlm, PlanRoundsCarryServingIntoTheSummaryAndReport) {
  test::TempDir dir;
  std::string sets;
  for (const auto& s : kTinyLlm) {
    const auto eq = s.find('=');
    sets += ", " + s.substr(0, eq) + ": " + s.substr(eq + 1);
  }
  const std::string plan = dir.write("plan.yaml", "vendor: cpu\nlog_dir: " + dir.path() +
                                                      "/results\ninference:\n  \"llm:libtorch:CPU:1\": {compiler: "
                                                      "libtorch" +
                                                      sets + "}\n");
  const Result r = xpuperf({"--root", kRoot, "run", plan}, dir.path(), {}, 600);
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string run = run_folder_in(dir.path() + "/results");
  std::ifstream in(run + "/summary.json");
  const json s = json::parse(in);
  const json& c = s["cases"][0];
  ASSERT_EQ(c["rounds"].size(), 1u);
  EXPECT_EQ(c["rounds"][0]["generation"]["server"].size(), 2u);
  EXPECT_GT(c["aggregate"]["prefill_tokens_per_second"]["median"].get<double>(), 0);
  EXPECT_GT(c["aggregate"]["offline_output_tokens_per_second"]["median"].get<double>(), 0);
  EXPECT_TRUE(c["aggregate"].contains("server_max_rate_within_bounds"));
  const std::string md = test::read_file(run + "/summary.md");
  EXPECT_TRUE(has(md, "| generating case | prefill tokens/s |")) << md;
  EXPECT_TRUE(has(md, "| 0 of 2 |")) << md;  // no run is valid by LoadGen's rules
  const std::string html = test::read_file(run + "/report.html");
  EXPECT_TRUE(has(html, "Server: time to first token against load")) << html.substr(0, 2000);
  EXPECT_TRUE(has(html, "under the minimum duration of 600 s (LoadGen&#39;s)") ||
              has(html, "under the minimum duration of 600 s (LoadGen's)"));
  // The serving sweep: its frontier in report.html, a CSV row a point, and compare's rows.
  EXPECT_TRUE(has(html, "<h3>Serving sweep</h3>")) << html;
  EXPECT_TRUE(has(html, "Throughput against interactivity")) << html;
  EXPECT_TRUE(has(html, "font-size=\"10\"")) << "each point labelled by its concurrency";
  const std::string csv = test::read_file(run + "/serving_sweep.csv");
  EXPECT_TRUE(has(csv, "\nllm:libtorch:CPU:1,1,8/4,8,4,4,true,6,")) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4) << "a header and 3 points: " << csv;
  const Result cmp = xpuperf({"--root", kRoot, "compare", run, run});
  EXPECT_TRUE(has(cmp.output, "sweep 8/4 at concurrency 4 output tokens/s per GPU")) << cmp.output;
  EXPECT_TRUE(has(cmp.output, "sweep 8/4 at concurrency 1 TPOT p50 ms")) << cmp.output;
}

}  // namespace
}  // namespace xpuperf
