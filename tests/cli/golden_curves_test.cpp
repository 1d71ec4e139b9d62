// The training runtime's numbers, held still while its code changes: every switch row of the CPU
// sweep on a tiny GPT-2 (fp32, bf16, data parallel, accumulation, checkpointing, ZeRO-1/2/3, tensor,
// pipeline and both), LeNet-5 on Fashion-MNIST and tiny ResNet-50 and ViT, each through
// `xpuperf train` as a user runs it, six steps. Every step's loss and the final evaluation must
// equal, to 1e-6, what tests/golden/training_curves.json recorded from main before the runtime
// was rebuilt as strategies: the same operations in the same order give the same numbers.
//
// The numbers depend on LibTorch's kernels, so the file names the LibTorch it was recorded with and
// another LibTorch skips the comparison (saying so); OpenBLAS's kernels are pinned (blas_pinned).
// XPUPERF_UPDATE_GOLDEN=1 records a row anew: do it only on a commit whose runtime is trusted, and say so in the
// commit.
//
// Some kernels follow the CPU beyond what can be pinned: ResNet-50's convolutions run through oneDNN, whose
// kernels and blocking depend on the CPU's instruction sets and caches (DNNL_MAX_CPU_ISA changes its numbers),
// and an Intel Xeon with AVX-512 and the AMD EPYC the rows were first recorded on agree on its first step and
// part from the second. A row may therefore hold one curve for each kind of CPU it was recorded on
// (`other_cpus`, named by /proc/cpuinfo's model name), and the run passes when it is one of them.
// XPUPERF_UPDATE_GOLDEN=cpu adds this CPU's curve to a row, again only from a trusted commit.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_util.h"
#include "perflog_util.h"

namespace xpuperf {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

const char* kFashion = "/usr/share/datasets/fashion-mnist";
const std::string kGolden = test::test_path("golden/training_curves.json");

struct Row {
  std::string name;
  std::string case_name;
  int ranks;
  std::vector<std::string> sets;
};

// A GPT-2 of two blocks of width 32 and 256 tokens on random ids, one thread a rank (the sums' order, and so
// the numbers, do not change with the machine's cores).
std::vector<std::string> tiny_gpt(std::vector<std::string> more) {
  std::vector<std::string> sets = {"synthetic_data=true", "synthetic_tokens=8192",
                                   "vocab_size=256",      "n_layer=2",
                                   "n_embd=32",           "n_head=2",
                                   "seq_length=16",       "train_batch_size=8",
                                   "eval_batch_size=16",  "lr=0.003",
                                   "warmup_steps=2",      "clip_grad_norm=0.5",
                                   "precision=fp32"};
  sets.insert(sets.end(), more.begin(), more.end());
  return sets;
}

std::vector<std::string> tiny_image(std::vector<std::string> more) {
  std::vector<std::string> sets = {"synthetic_data=true",
                                   "synthetic_train_samples=64",
                                   "synthetic_eval_samples=16",
                                   "num_classes=10",
                                   "image_size=32",
                                   "resize_size=32",
                                   "train_batch_size=8",
                                   "eval_batch_size=8",
                                   "warmup_epochs=0",
                                   "warmup_steps=2",
                                   "loader_threads=1",
                                   "precision=fp32"};
  sets.insert(sets.end(), more.begin(), more.end());
  return sets;
}

void PrintTo(const Row& row, std::ostream* os) {
  *os << row.name;
}

std::vector<Row> rows() {
  return {
      {"gpt2_fp32", "gpt2", 1, tiny_gpt({})},
      {"gpt2_bf16", "gpt2", 1, tiny_gpt({"precision=bf16"})},
      {"gpt2_dp2", "gpt2", 2, tiny_gpt({"train_batch_size=4"})},
      {"gpt2_accumulation", "gpt2", 1, tiny_gpt({"train_batch_size=4", "global_batch_size=16"})},
      {"gpt2_checkpointing", "gpt2", 1, tiny_gpt({"activation_checkpointing=true"})},
      {"gpt2_zero1", "gpt2", 2, tiny_gpt({"train_batch_size=4", "zero_stage=1"})},
      {"gpt2_zero2", "gpt2", 2, tiny_gpt({"train_batch_size=4", "zero_stage=2"})},
      {"gpt2_zero3", "gpt2", 2, tiny_gpt({"train_batch_size=4", "zero_stage=3"})},
      {"gpt2_tp2", "gpt2", 2, tiny_gpt({"tensor_parallel=2"})},
      {"gpt2_pp2", "gpt2", 2, tiny_gpt({"train_batch_size=4", "global_batch_size=16", "pipeline_parallel=2"})},
      {"gpt2_tp2_pp2", "gpt2", 4,
       tiny_gpt({"train_batch_size=4", "global_batch_size=16", "tensor_parallel=2", "pipeline_parallel=2"})},
      {"lenet5_fp32", "lenet5", 1, {"train_batch_size=64", "eval_batch_size=1000"}},
      {"lenet5_dp2", "lenet5", 2, {"train_batch_size=32", "eval_batch_size=1000"}},
      {"resnet50_tiny", "resnet50", 1, tiny_image({"lr=0.002"})},
      {"vit_tiny", "vit", 1,
       tiny_image({"lr=0.001", "patch_size=8", "num_layers=2", "hidden_dim=32", "num_heads=2", "mlp_dim=64"})},
  };
}

// OpenBLAS picks its GEMM kernels by the CPU (Haswell's AVX2 ones, SkylakeX's or CooperLake's
// AVX-512 ones), and each sums in its own order: ResNet-50's convolutions differed from step 1 on
// an AVX-512 machine. The rows are recorded and compared with the Haswell kernels, which every
// x86-64 CPU with AVX2 runs; elsewhere the comparison is skipped (cpu_can_pin_blas).
// LibTorch's bf16 products go through oneDNN, whose AMX kernels (Sapphire Rapids and later) sum in
// another order than the rest: on a Xeon with AMX, gpt2_bf16 parted from the recorded curve at step
// 2 (5.550792 against 5.550799), and with oneDNN capped at AVX512_CORE_BF16, _VNNI or AVX512_CORE it
// was the recorded curve to the bit. The model name does not tell the two Xeons apart, so oneDNN is
// capped below AMX for every row.
const std::map<std::string, std::string>& blas_pinned() {
  static const std::map<std::string, std::string> env = {{"OPENBLAS_CORETYPE", "Haswell"},
                                                         {"ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16"}};
  return env;
}

bool cpu_can_pin_blas() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

// Rank 0's FINISHED event of `xpuperf train` with the row's settings and six steps.
json finished_event_of_row(const Row& row) {
  std::vector<std::string> args = {"train", "--case", row.case_name, "--vendor", "cpu", "--hardware", "CPU"};
  if (row.ranks > 1) args.insert(args.end(), {"--nproc", std::to_string(row.ranks)});
  if (row.case_name == "lenet5") args.insert(args.end(), {"--data-dir", kFashion});
  std::vector<std::string> sets = row.sets;
  sets.insert(sets.end(), {"max_steps=6", "log_freq=1", "eval_interval_epochs=0", "num_threads=1",
                           "record_loss_curve=true", "seed=1234"});
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  const Result r = xpuperf(args, XPUPERF_SOURCE_DIR, blas_pinned(), 600);
  if (r.code != 0) {
    ADD_FAILURE() << row.name << ": exit " << r.code << "\n" << r.output;
    return json();
  }
  const auto events = events_of(r.output);
  const auto* finished = event_value(events, "FINISHED");
  if (!finished) {
    ADD_FAILURE() << row.name << ": no FINISHED event\n" << r.output;
    return json();
  }
  if (!finished->contains("loss_curve") || !finished->contains("final_metric")) {
    ADD_FAILURE() << row.name << ": FINISHED has no loss_curve or final_metric: " << finished->dump();
    return json();
  }
  return *finished;
}

// What a golden row holds of it: every step's loss and the final evaluation.
json finished_of_row(const Row& row) {
  const json finished = finished_event_of_row(row);
  if (finished.is_null()) return finished;
  return {{"loss_curve", finished.at("loss_curve")}, {"final_metric", finished.at("final_metric")}};
}

// The recorded file; a row being recorded by another test process is written whole (record_row).
json read_golden() {
  const std::string text = fs::exists(kGolden) ? test::read_file(kGolden) : "";
  return text.empty() ? json::object() : json::parse(text);
}

// This CPU's model name (/proc/cpuinfo), which names a row's curve for another kind of CPU.
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      const auto value = line.substr(line.find(':') + 1);
      return value.substr(value.find_first_not_of(' '));
    }
  return "unknown CPU";
}

// Adds a row to the file (`this_cpu`: as this CPU's curve beside the row's own). ctest runs the rows
// as processes side by side: a lock makes each read-change-write whole.
void record_row(const std::string& name, json value, bool this_cpu = false) {
  const std::string lock = (fs::temp_directory_path() / "xpuperf-training-curves.lock").string();
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0) << lock;
  ASSERT_EQ(::flock(fd, LOCK_EX), 0) << lock;
  json golden = read_golden();
  if (!golden.is_object()) golden = json::object();
  golden["libtorch"] = XPUPERF_TORCH_VERSION;
  if (!this_cpu) {
    golden["rows"][name] = value;
    if (golden.contains("other_cpus")) golden["other_cpus"].erase(name);
  } else {
    value["cpu"] = cpu_model();
    json& list = golden["other_cpus"][name];
    if (!list.is_array()) list = json::array();
    json kept = json::array();
    for (const auto& curve : list)
      if (curve.value("cpu", "") != value["cpu"]) kept.push_back(curve);
    kept.push_back(value);
    list = kept;
  }
  // Through a temporary and a rename, so a test reading the file never sees half of it.
  const std::string temporary = kGolden + ".partial";
  std::ofstream(temporary) << golden.dump(1) << "\n";
  fs::rename(temporary, kGolden);
  ::close(fd);
}

// The differences of `got` from a recorded curve, one line each; none when it is that curve.
std::vector<std::string> differences(const json& got, const json& want, const std::string& row) {
  std::vector<std::string> out;
  const auto near = [&](const json& g, const json& w, const std::string& what) {
    const double a = g.get<double>(), b = w.get<double>();
    if (!(std::abs(a - b) <= 1e-6 * std::max(1.0, std::abs(b))))
      out.push_back(what + ": " + std::to_string(a) + ", recorded " + std::to_string(b));
  };
  if (got["loss_curve"].size() != want["loss_curve"].size()) return {row + ": another number of steps"};
  for (std::size_t i = 0; i < want["loss_curve"].size(); ++i)
    near(got["loss_curve"][i], want["loss_curve"][i], row + " step " + std::to_string(i + 1));
  if (got["final_metric"]["name"] != want["final_metric"]["name"]) out.push_back(row + ": another final metric");
  near(got["final_metric"]["value"], want["final_metric"]["value"], row + " final evaluation");
  return out;
}

class GoldenCurves : public ::testing::TestWithParam<Row> {};

TEST_P(GoldenCurves, AreTheRecordedOnes) {
  const Row& row = GetParam();
  if (row.case_name == "lenet5" && !fs::exists(std::string(kFashion) + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)";
  const char* update = std::getenv("XPUPERF_UPDATE_GOLDEN");
  const bool recording = update && (std::string(update) == "1" || std::string(update) == "cpu");
  const json golden = read_golden();
  if (!recording) {
    ASSERT_TRUE(golden.contains("rows") && golden["rows"].contains(row.name))
        << kGolden << " has no row " << row.name << " (XPUPERF_UPDATE_GOLDEN=1 records it)";
    if (!cpu_can_pin_blas())
      GTEST_SKIP() << "the rows were recorded with OpenBLAS's Haswell (x86-64 AVX2) kernels, which this CPU lacks: "
                      "other sums, other last digits";
    if (golden.value("libtorch", "") != XPUPERF_TORCH_VERSION)
      GTEST_SKIP() << kGolden << " was recorded with LibTorch " << golden.value("libtorch", "?") << ", this build has "
                   << XPUPERF_TORCH_VERSION << ": other kernels, other last digits";
  }
  const json got = finished_of_row(row);
  if (got.is_null()) return;
  if (recording) {
    record_row(row.name, got, std::string(update) == "cpu");
    return;
  }
  const auto mismatch = differences(got, golden["rows"][row.name], row.name);
  if (mismatch.empty()) return;
  std::string cpus;
  if (golden.contains("other_cpus") && golden["other_cpus"].contains(row.name))
    for (const auto& curve : golden["other_cpus"][row.name]) {
      if (differences(got, curve, row.name).empty()) return;  // this kind of CPU's curve
      cpus += (cpus.empty() ? "" : ", ") + curve.value("cpu", "?");
    }
  std::string lines;
  for (const auto& m : mismatch) lines += "  " + m + "\n";
  ADD_FAILURE() << row.name << " is not the recorded curve (on " << cpu_model()
                << "; other CPUs' curves: " << (cpus.empty() ? "none" : cpus) << "):\n"
                << lines;
}

INSTANTIATE_TEST_SUITE_P(Rows, GoldenCurves, ::testing::ValuesIn(rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

// A tiny BERT (two layers of width 32, two heads, 64 intermediate units) on random WordPiece ids.
// No dropout: a split attention draws its masks for its own heads, not the unsplit model's.
std::vector<std::string> tiny_bert(std::vector<std::string> more) {
  std::vector<std::string> sets = {"synthetic_data=true",
                                   "synthetic_tokens=8192",
                                   "vocab_size=256",
                                   "num_hidden_layers=2",
                                   "hidden_size=32",
                                   "num_attention_heads=2",
                                   "intermediate_size=64",
                                   "seq_length=16",
                                   "train_batch_size=8",
                                   "eval_batch_size=16",
                                   "lr=0.003",
                                   "warmup_steps=2",
                                   "clip_grad_norm=0.5",
                                   "precision=fp32",
                                   "dropout=0"};
  sets.insert(sets.end(), more.begin(), more.end());
  return sets;
}

// Tensor parallelism through `xpuperf train` on every transformer case: the model's heads and MLP
// units split over two ranks that take the same batch give the unsplit model's loss curve and
// evaluation within 1e-5 (the sums run in another order; any LibTorch). GPT-2's is a golden row
// above, and the Llama model's is held in xpuperf_parallel_tests (it has no training case yet).
// With `sequence_parallel=true` (a row named *_sp), Megatron's sequence parallelism too.
class TensorParallelCurves : public ::testing::TestWithParam<Row> {};

TEST_P(TensorParallelCurves, AreTheUnsplitModels) {
  Row whole = GetParam();
  whole.name += "_whole";
  Row split = GetParam();
  split.ranks = 2;
  split.sets.push_back("tensor_parallel=2");
  if (split.name.size() > 3 && split.name.compare(split.name.size() - 3, 3, "_sp") == 0)
    split.sets.push_back("sequence_parallel=true");
  const json a = finished_event_of_row(split), b = finished_event_of_row(whole);
  if (a.is_null() || b.is_null()) return;
  EXPECT_EQ(a.value("tensor_parallel", 0), 2) << "the model was split: " << a.dump();
  ASSERT_EQ(a["loss_curve"].size(), b["loss_curve"].size());
  ASSERT_GE(b["loss_curve"].size(), 6u);
  for (std::size_t i = 0; i < b["loss_curve"].size(); ++i) {
    const double got = a["loss_curve"][i].get<double>(), want = b["loss_curve"][i].get<double>();
    EXPECT_NEAR(got, want, 1e-5 * std::abs(want)) << split.name << " step " << i + 1;
  }
  const double got = a["final_metric"]["value"].get<double>(), want = b["final_metric"]["value"].get<double>();
  EXPECT_NEAR(got, want, 1e-5 * std::max(1.0, std::abs(want))) << split.name << " final evaluation";
}

INSTANTIATE_TEST_SUITE_P(Cases, TensorParallelCurves,
                         ::testing::Values(Row{"bert_tp2", "bert", 1, tiny_bert({})},
                                           Row{"bert_tp2_sp", "bert", 1, tiny_bert({})},
                                           Row{"gpt2_tp2_sp", "gpt2", 1, tiny_gpt({"dropout=0"})},
                                           Row{"vit_tp2", "vit", 1,
                                               tiny_image({"lr=0.001", "patch_size=8", "num_layers=2", "hidden_dim=32",
                                                           "num_heads=2", "mlp_dim=64"})}),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

}  // namespace
}  // namespace xpuperf
