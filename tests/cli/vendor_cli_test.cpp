// The vendor plug-in end to end: the simulated accelerator (vendors/sim) trains as the CPU does,
// and a plug-in that cannot be used stops the run before anything starts, saying which file and
// what to do.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "cli_util.h"
#include "perflog_util.h"

namespace xpuperf {
namespace {

const char* kData = "/usr/share/datasets/fashion-mnist";

std::vector<std::string> lenet5(const std::string& vendor, const std::string& hardware,
                                std::vector<std::string> extra) {
  std::vector<std::string> args = {"train",
                                   "--case",
                                   "lenet5",
                                   "--vendor",
                                   vendor,
                                   "--hardware",
                                   hardware,
                                   "--data-dir",
                                   kData,
                                   "--set",
                                   "record_loss_curve=true",
                                   "--set",
                                   "num_threads=1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<double> loss_curve(const std::string& output) {
  const auto events = events_of(output);
  const auto* finished = event_value(events, "FINISHED");
  if (!finished || !finished->contains("loss_curve")) return {};
  return (*finished)["loss_curve"].get<std::vector<double>>();
}

void expect_same_curve(const std::vector<double>& sim, const std::vector<double>& cpu) {
  ASSERT_FALSE(cpu.empty());
  ASSERT_EQ(sim.size(), cpu.size());
  for (std::size_t i = 0; i < cpu.size(); ++i) EXPECT_NEAR(sim[i], cpu[i], 1e-6) << "step " << i + 1;
}

class VendorSim : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(std::string(kData) + "/train-images-idx3-ubyte.gz"))
      GTEST_SKIP() << "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)";
  }
};

TEST_F(VendorSim, Lenet5TrainsOnTheSimDeviceWithTheCpusCurve) {
  const Result sim = xpuperf(lenet5("sim", "SIM", {"--set", "max_steps=30"}), XPUPERF_SOURCE_DIR);
  ASSERT_EQ(sim.code, 0) << sim.output;
  const Result cpu = xpuperf(lenet5("cpu", "CPU", {"--set", "max_steps=30"}), XPUPERF_SOURCE_DIR);
  ASSERT_EQ(cpu.code, 0) << cpu.output;
  expect_same_curve(loss_curve(sim.output), loss_curve(cpu.output));
  const auto events = events_of(sim.output);
  const auto* submit = event_value(events, "SUBMIT_INFO");
  ASSERT_TRUE(submit) << sim.output;
  EXPECT_EQ((*submit)["device"], "sim:0");
  EXPECT_EQ((*submit)["vendor"], "sim");
  EXPECT_EQ((*submit)["plugin"], "xpuperf-sim 1.0");
}

TEST_F(VendorSim, TwoRanksTrainThroughTheSimCollectivesWithTheCurveOfTwoCpuRanks) {
  const Result sim = xpuperf(lenet5("sim", "SIM", {"--nproc", "2", "--set", "max_steps=20"}), XPUPERF_SOURCE_DIR);
  ASSERT_EQ(sim.code, 0) << sim.output;
  const Result cpu = xpuperf(lenet5("cpu", "CPU", {"--nproc", "2", "--set", "max_steps=20"}), XPUPERF_SOURCE_DIR);
  ASSERT_EQ(cpu.code, 0) << cpu.output;
  expect_same_curve(loss_curve(sim.output), loss_curve(cpu.output));
  EXPECT_TRUE(has(sim.output, "\"dist_backend\":\"sim\"")) << sim.output;
}

// The device-decoder path of the image loader: MobileNetV2 on sim decodes its JPEGs with the sim
// plug-in's decoder (jpeg_decoder: device, its config) into the sim's memory, and the batches, hence
// the curve, are the CPU decoder's. A decoder the device does not have is refused with the choices.
TEST_F(VendorSim, MobileNetV2DecodesItsJpegsOnTheSimDeviceWithTheCpusCurve) {
  test::TempDir dir;
  const Result jpegs = xpuperf({"data", "fashion-mnist", "-o", dir.path() + "/jpeg", "--train-per-class", "20",
                                "--val-per-class", "5", "--size", "64"},
                               XPUPERF_SOURCE_DIR);
  ASSERT_EQ(jpegs.code, 0) << jpegs.output;
  auto train = [&](const std::string& vendor, const std::string& hardware, std::vector<std::string> extra) {
    std::vector<std::string> args = {"train",      "--case", "mobilenetv2", "--vendor",          vendor,
                                     "--hardware", hardware, "--data-dir",  dir.path() + "/jpeg"};
    for (const char* set : {"image_size=32", "resize_size=32", "num_classes=10", "max_steps=4", "train_batch_size=16",
                            "num_threads=1", "loader_threads=2", "record_loss_curve=true", "eval_interval_epochs=0"})
      args.insert(args.end(), {"--set", set});
    args.insert(args.end(), extra.begin(), extra.end());
    return xpuperf(args, XPUPERF_SOURCE_DIR, {}, 300);
  };
  const Result sim = train("sim", "SIM", {});
  ASSERT_EQ(sim.code, 0) << sim.output;
  EXPECT_TRUE(has(sim.output, "train images: sim uploader (libjpeg-turbo on the host, crops into sim memory) on sim:0"))
      << sim.output;
  const Result cpu = train("cpu", "CPU", {"--set", "jpeg_decoder=cpu"});
  ASSERT_EQ(cpu.code, 0) << cpu.output;
  EXPECT_TRUE(has(cpu.output, "train images: libjpeg-turbo")) << cpu.output;
  expect_same_curve(loss_curve(sim.output), loss_curve(cpu.output));

  const Result other = train("sim", "SIM", {"--set", "jpeg_decoder=nvjpeg"});
  EXPECT_NE(other.code, 0);
  EXPECT_TRUE(has(other.output, "jpeg_decoder: nvjpeg: sim:0's decoder is sim; use jpeg_decoder: sim, device or cpu"))
      << other.output;
}

// A content tree whose vendor "bad" names `plugin`: the standard cases, and a vendor folder of its own.
struct BadVendorTree {
  test::TempDir dir;
  explicit BadVendorTree(const std::string& vendor_yaml) {
    std::filesystem::create_directory_symlink(std::string(XPUPERF_SOURCE_DIR) + "/cases", dir.path() + "/cases");
    dir.write("vendors/bad/vendor.yaml", vendor_yaml);
    dir.write("vendors/bad/training/lenet5-libtorch/config/config_BADx1x1.yaml", "vendor: bad\n");
  }
  Result train() const {
    return xpuperf({"train", "--case", "lenet5", "--vendor", "bad", "--hardware", "BAD", "--set", "synthetic_data=true",
                    "--set", "max_steps=1"},
                   dir.path());
  }
};

std::string yaml_for(const std::string& plugin) {
  return "device_type: privateuse1\ndevice_name: bad\ncollective_backend: gloo\nplugin: " + plugin + "\n";
}

TEST(VendorPlugin, APluginThatCannotBeUsedStopsTheRunNamingTheFileAndTheFix) {
  const std::string libs = BAD_PLUGIN_DIR;
  struct Probe {
    std::string plugin, expected;
  };
  const std::vector<Probe> probes = {
      {"xpuperf_vendor_nosuch", "plugin 'xpuperf_vendor_nosuch' not found (looked for "},
      {libs + "/libbad_plugin_undefined_symbol.so", "most likely built against another LibTorch or another xpuperf"},
      {libs + "/libbad_plugin_no_entry.so", "is not an xpuperf plug-in: it exports no xpuperf_vendor_plugin_v1"},
      {libs + "/libbad_plugin_interface_v2.so", "is written for xpuperf's plug-in interface 2"},
      {libs + "/libbad_plugin_torch_version.so", "was built against LibTorch 0.9.0"},
      {libs + "/libbad_plugin_init_throws.so", "failed to start: no device found: is the driver loaded?"},
      {libs + "/libbad_plugin_wrong_device.so", "device_name is 'bad', but the plug-in"},
  };
  for (const auto& probe : probes) {
    SCOPED_TRACE(probe.plugin);
    const BadVendorTree tree(yaml_for(probe.plugin));
    const Result r = tree.train();
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_TRUE(has(r.output, "vendors/bad/vendor.yaml: ")) << r.output;
    EXPECT_TRUE(has(r.output, probe.expected)) << r.output;
    EXPECT_FALSE(has(r.output, "TRAIN_START")) << r.output;
  }
}

TEST(VendorPlugin, AVendorYamlPromisingABackendThePluginLacksIsRefused) {
  const BadVendorTree tree("device_type: privateuse1\ndevice_name: bad\ncollective_backend: hccl\nplugin: " +
                           std::string(BAD_PLUGIN_DIR) + "/libbad_plugin_good.so\n");
  const Result r = tree.train();
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "collective_backend is 'hccl', but the plug-in")) << r.output;
}

TEST(VendorPlugin, AnUnknownDeviceTypeIsRefusedBeforeLibTorchStarts) {
  const BadVendorTree tree("device_type: npu\n");
  const Result r = tree.train();
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "vendors/bad/vendor.yaml:1: unknown device_type 'npu'")) << r.output;
}

// A base case both ways on the sim vendor: PyTorch's primitives on sim:0 and the plug-in's own
// implementation, each checked and beside the sim datasheet.
TEST(VendorBase, TheSimVendorRunsABaseCaseThroughPyTorchAndThroughItsPlugin) {
  const std::vector<std::string> base = {"base",       "main_memory-bandwidth",
                                         "--vendor",   "sim",
                                         "--hardware", "SIM",
                                         "--set",      "repeats=2",
                                         "--set",      "torch_array_mib=8",
                                         "--set",      "cpu_array_mib=8"};
  auto with_backend = [&](const std::string& backend) {
    auto args = base;
    args.insert(args.end(), {"--backend", backend});
    return xpuperf(args, XPUPERF_SOURCE_DIR);
  };
  const Result torch = with_backend("torch");
  ASSERT_EQ(torch.code, 0) << torch.output;
  EXPECT_TRUE(has(torch.output, "main_memory-bandwidth (torch, LibTorch tensor operations on sim:0")) << torch.output;
  const Result own = with_backend("auto");
  ASSERT_EQ(own.code, 0) << own.output;
  EXPECT_TRUE(has(own.output, "main_memory-bandwidth (sim, the sim plug-in's own loops")) << own.output;
  for (const auto* r : {&torch, &own}) {
    const auto events = events_of(r->output);
    const auto* finished = event_value(events, "FINISHED");
    ASSERT_TRUE(finished) << r->output;
    EXPECT_TRUE((*finished)["correct"].get<bool>()) << r->output;
    EXPECT_EQ((*finished)["vendor"], "sim");
    EXPECT_EQ((*finished)["figures"][0]["datasheet_value"], 50.0) << r->output;  // vendors/sim/specs.yaml
  }
  const Result gemm = xpuperf({"base", "computation-FP32", "--vendor", "sim", "--hardware", "SIM", "--set", "repeats=1",
                               "--set", "seconds=0.05", "--set", "torch_size=64", "--set", "warmup=1"},
                              XPUPERF_SOURCE_DIR);
  ASSERT_EQ(gemm.code, 0) << gemm.output;
  EXPECT_TRUE(has(gemm.output, "LibTorch mm on sim:0")) << gemm.output;
  EXPECT_TRUE(has(gemm.output, "0 wrong of 64 sampled elements")) << gemm.output;
}

// The collectives base cases on a plug-in's device through its own collective backend (backend
// torch: the vendor-neutral figure): two ranks on sim:0 and sim:1 over the sim backend, every size
// checked, reduce-scatter included (which Gloo alone lacks).
TEST(VendorBase, TheSimVendorsCollectivesRunThroughItsBackend) {
  for (const std::string op : {"allreduce", "reducescatter"}) {
    SCOPED_TRACE(op);
    const Result r = xpuperf({"base", "interconnect-" + op, "--vendor", "sim", "--hardware", "SIM", "--nproc", "2",
                              "--set", "device_min_bytes=65536", "--set", "device_max_bytes=262144", "--set",
                              "device_iterations=2", "--set", "warmup=1"},
                             XPUPERF_SOURCE_DIR);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_TRUE(has(r.output, "c10d sim on sim:0, 2 ranks, float32")) << r.output;
    EXPECT_TRUE(has(r.output, "0 wrong elements over 3 sizes")) << r.output;
  }
}

// lenet5 inference on the sim vendor goes through the engine its plug-in registers (its vendor
// config says compiler: sim), on sim:0, and agrees with the validation run.
TEST_F(VendorSim, Lenet5InfersThroughTheEngineThePluginRegisters) {
  test::TempDir out;
  const Result r = xpuperf({"infer", "--case", "lenet5", "--vendor", "sim", "--hardware", "SIM", "--data-dir", kData,
                            "--out", out.path(), "--set", "latency_queries=20"},
                           XPUPERF_SOURCE_DIR);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "compiler sim, device sim:0")) << r.output;
  EXPECT_TRUE(has(r.output, "ran: sim: the case's model on sim:0 in float32")) << r.output;
  const auto events = events_of(r.output);
  const auto* finished = event_value(events, "FINISHED");
  ASSERT_TRUE(finished) << r.output;
  EXPECT_EQ((*finished)["vendor"], "sim");
}

// `xpuperf vendor check sim`: the device, every operator and dtype, every collective over two
// ranks through the sim backend, and LeNet-5's curve against the CPU's, all passing. The sim's own
// forward kernels (sim_ops.cpp) ran where it registered them, the composite operators elsewhere and
// in training.
TEST(VendorCheck, TheSimVendorPassesItsConformance) {
  const Result r = xpuperf({"vendor", "check", "sim", "--steps", "5"}, XPUPERF_SOURCE_DIR);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "vendor sim, device sim:0, plug-in xpuperf-sim 1.0")) << r.output;
  for (const char* row :
       {"| device | copy host to device and back | float32 | 0 | 0 | pass |",
        "| operators | add_rms_norm (gradients) | bfloat16 |", "| operators | decode_attention | bfloat16 |",
        "| operators | batch_norm_act (gradients) | float32 |",
        "| collectives | form the group | - | 0 | 0 | pass: backend sim |",
        "| collectives | reduce_scatter (sum) | float32 | 0 | 0 | pass |",
        "| training | LeNet-5, 5 steps on synthetic images, against the CPU | float32 | 0 |"})
    EXPECT_TRUE(has(r.output, row)) << row << "\n" << r.output;
  EXPECT_FALSE(has(r.output, "FAIL")) << r.output;
  // The row that starts so, to its end.
  const auto row_of = [&](const std::string& start) {
    const auto at = r.output.find(start);
    return at == std::string::npos ? std::string() : r.output.substr(at, r.output.find('\n', at) - at);
  };
  const std::pair<const char*, const char*> ran[] = {
      {"| operators | add_rms_norm | float32 |", "pass: the device's kernel |"},
      {"| operators | silu_mul | bfloat16 |", "pass: the device's kernel |"},
      {"| operators | add_rms_norm (gradients) | float32 |", "pass: the composite operator |"},
      {"| operators | bias_gelu | float32 |", "pass: the composite operator |"}};
  for (const auto& [start, end] : ran) {
    const std::string row = row_of(start);
    EXPECT_TRUE(row.size() >= std::string(end).size() && row.substr(row.size() - std::string(end).size()) == end)
        << start << " ... " << end << "\n"
        << r.output;
  }
}

// A plug-in that cannot start fails the check, with its message, instead of passing what never ran.
TEST(VendorCheck, APluginThatCannotStartFailsTheCheckWithItsMessage) {
  const BadVendorTree tree(yaml_for(std::string(BAD_PLUGIN_DIR) + "/libbad_plugin_init_throws.so"));
  const Result r = xpuperf({"vendor", "check", "bad", "--nproc", "1", "--steps", "2"}, tree.dir.path());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "| ranks | rank 0 ran to its end | - | - | 0 | FAIL: exited with code 1")) << r.output;
  EXPECT_TRUE(has(r.output, "failed to start: no device found: is the driver loaded?")) << r.output;
  EXPECT_TRUE(has(r.output, "| training | LeNet-5")) << r.output;
  EXPECT_TRUE(has(r.output, "0 of 2 checks passed")) << r.output;
}

// A plan on the sim vendor: its report names the vendor, the device and the plug-in with its
// version, and the host's monitor sampled the rounds.
TEST_F(VendorSim, APlanOnTheSimVendorWritesAReportNamingDeviceAndPlugin) {
  test::TempDir dir;
  dir.write("plan.yaml", std::string("vendor: sim\nlog_dir: results\nhosts: [localhost]\nlauncher: local\n"
                                     "base:\n  \"main_memory-bandwidth:SIM:1:1:1\": {repeats: 2, cpu_array_mib: 8}\n"
                                     "cases:\n  \"lenet5:libtorch:SIM:1:1:1\": {data_dir: ") +
                             kData + ", max_steps: 10}\n");
  const Result r = xpuperf({"--root", XPUPERF_SOURCE_DIR, "run", "plan.yaml"}, dir.path());
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string run = run_folder_in(dir.path() + "/results");
  const std::string summary = test::read_file(run + "/summary.md");
  EXPECT_TRUE(has(summary, "Vendor `sim` (device sim:0, plug-in xpuperf-sim 1.0)")) << summary;
  EXPECT_TRUE(has(summary, "| main_memory-bandwidth:SIM:1:1:1 | 1 / 1 |")) << summary;
  EXPECT_TRUE(has(summary, "| lenet5:libtorch:SIM:1:1:1 | 1 / 1 |")) << summary;
  std::string monitor;
  for (const auto& node : std::filesystem::directory_iterator(run + "/lenet5_libtorch_SIM_1_1_1/round1"))
    if (std::filesystem::exists(node.path() / "monitor.csv"))
      monitor = test::read_file((node.path() / "monitor.csv").string());
  EXPECT_TRUE(has(monitor, ",cpu,util_percent,")) << monitor.substr(0, 400);
  // The sim's monitor library (vendor.yaml: monitor: library): the device's memory in use.
  EXPECT_TRUE(has(monitor, ",sim0,mem_used_bytes,")) << monitor;
}

// Tiny GPT-2 and Llama with fused_kernels: true (their _base.yaml's) on sim:0: xpuperf's operators
// go through the dispatcher, which takes the composite forms in training (the sim's kernels are
// forward kernels), and the curve is the CPU's.
// Not to 1e-6 as LeNet-5's: the fallback hands the CPU kernels contiguous copies where the CPU run
// gives them strided views, and the products then round in another order (3e-5 after 5 steps).
TEST(VendorSimModels, TinyGptAndLlamaTrainWithTheFusedKernelsSwitchOnAsTheCpuDoes) {
  const std::vector<std::string> common = {"--set", "synthetic_data=true", "--set", "synthetic_tokens=65536",
                                           "--set", "seq_length=16",       "--set", "train_batch_size=4",
                                           "--set", "max_steps=5",         "--set", "record_loss_curve=true",
                                           "--set", "precision=fp32",      "--set", "fused_optimizer=foreach",
                                           "--set", "num_threads=1",       "--set", "fused_kernels=true"};
  const std::map<std::string, std::vector<std::string>> models = {
      {"gpt2", {"--set", "n_layer=2", "--set", "n_embd=32", "--set", "n_head=4"}},
      {"llama",
       {"--set", "num_hidden_layers=2", "--set", "hidden_size=32", "--set", "intermediate_size=64", "--set",
        "num_attention_heads=4", "--set", "num_key_value_heads=2"}}};
  for (const auto& entry : models) {
    const std::string& model = entry.first;  // named, not a structured binding: the lambda below takes it
    const std::vector<std::string>& sizes = entry.second;
    SCOPED_TRACE(model);
    auto run = [&](const std::string& vendor, const std::string& hardware) {
      std::vector<std::string> args = {"train", "--case", model, "--vendor", vendor, "--hardware", hardware};
      args.insert(args.end(), common.begin(), common.end());
      args.insert(args.end(), sizes.begin(), sizes.end());
      return xpuperf(args, XPUPERF_SOURCE_DIR);
    };
    const Result sim = run("sim", "SIM"), cpu = run("cpu", "CPU");
    ASSERT_EQ(sim.code, 0) << sim.output;
    ASSERT_EQ(cpu.code, 0) << cpu.output;
    const auto got = loss_curve(sim.output), want = loss_curve(cpu.output);
    ASSERT_EQ(got.size(), 5u) << sim.output;
    ASSERT_EQ(want.size(), 5u) << cpu.output;
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-4) << "step " << i + 1;
    EXPECT_TRUE(has(sim.output, "\"device\":\"sim:0\"")) << sim.output;
  }
}

}  // namespace
}  // namespace xpuperf
