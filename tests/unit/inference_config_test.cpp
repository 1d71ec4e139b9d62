#include "xpuperf/core/inference_config.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace xpuperf {
namespace {

const char* kConfigurations =
    "batch_size: 256\n"
    "flops: 4.12e9\n"
    "fp16: true\n"
    "compiler: tensorrt\n"
    "num_workers: 8\n"
    "log_freq: 30\n"
    "repeat: 5\n"
    "no_validation: false\n"
    "exist_onnx_path: null\n"
    "exist_compiler_path: null\n";

Config parse(const std::string& text, const std::string& name) {
  Diagnostics diags;
  auto c = load_config_text(text, name, diags);
  EXPECT_TRUE(c) << diags.format();
  return *c;
}

struct Merge {
  Config configurations = parse(kConfigurations, "configurations.yaml");
  Config parameters = parse("max_seq_length: 512\n", "parameters.yaml");
  std::optional<Config> vendor;
  std::vector<std::string> plan_keys = {"vendor", "hosts", "log_dir"};
  Diagnostics diags;

  Config run() {
    InferenceLayers layers{&configurations, &parameters, vendor ? &*vendor : nullptr, plan_keys};
    return merge_inference_layers(layers, diags);
  }
};

TEST(InferenceConfig, MergesConfigurationsParametersAndVendor) {
  Merge m;
  m.vendor = parse("batch_size: 128\ntensorrt_tmp_path: /tmp/trt\n", "nvidia_configurations.yaml");
  const Config c = m.run();
  EXPECT_FALSE(m.diags.has_errors()) << m.diags.format();
  EXPECT_EQ(c.get_int("batch_size"), 128);
  EXPECT_EQ(c.at("batch_size").source.str(), "nvidia_configurations.yaml:1");
  EXPECT_EQ(c.get_int("max_seq_length"), 512);
  EXPECT_EQ(c.at("max_seq_length").source.str(), "parameters.yaml:1");
  EXPECT_EQ(c.get_string("tensorrt_tmp_path"), "/tmp/trt");
  // A change is info, a new key a warning.
  ASSERT_EQ(m.diags.items().size(), 2u);
  EXPECT_EQ(m.diags.items()[0].severity, Severity::Info);
  EXPECT_EQ(m.diags.items()[0].message, "vendor changes 'batch_size' from 256 to 128");
  EXPECT_EQ(m.diags.items()[1].severity, Severity::Warning);
  EXPECT_EQ(m.diags.items()[1].message, "vendor adds a new key 'tensorrt_tmp_path' = /tmp/trt");
}

TEST(InferenceConfig, SameValueOverrideIsAnError) {
  Merge m;
  m.vendor = parse("fp16: true\nbatch_size: 256.0\n", "v.yaml");
  m.run();
  ASSERT_EQ(m.diags.error_count(), 2) << m.diags.format();
  EXPECT_EQ(format_diagnostic(m.diags.items()[0]),
            "v.yaml:1: error: 'fp16' overrides configurations.yaml:3 with the same value true\n"
            "    fix: remove the line: an override must change something");
  EXPECT_EQ(m.diags.items()[1].where.str(), "v.yaml:2");
}

TEST(InferenceConfig, KeyInConfigurationsAndParametersIsAnError) {
  Merge m;
  m.parameters = parse("max_seq_length: 512\nbatch_size: 8\n", "parameters.yaml");
  m.run();
  ASSERT_EQ(m.diags.error_count(), 1);
  EXPECT_EQ(m.diags.items()[0].where.str(), "parameters.yaml:2");
  EXPECT_EQ(m.diags.items()[0].message,
            "'batch_size' is defined in both parameters and configurations (configurations.yaml:1)");
}

TEST(InferenceConfig, PlanKeyCollisionsAreErrors) {
  Merge m;
  m.parameters = parse("hosts: 2\n", "parameters.yaml");
  m.vendor = parse("log_dir: /x\n", "v.yaml");
  m.run();
  ASSERT_EQ(m.diags.error_count(), 2) << m.diags.format();
  EXPECT_EQ(m.diags.items()[0].message, "'hosts' is also a plan key");
  EXPECT_EQ(m.diags.items()[1].message, "'log_dir' is a plan key: a vendor config may not set it");
}

TEST(InferenceConfig, VendorMayNotTouchParameters) {
  Merge m;
  m.vendor = parse("max_seq_length: 384\n", "v.yaml");
  const Config c = m.run();
  ASSERT_EQ(m.diags.error_count(), 1);
  EXPECT_EQ(m.diags.items()[0].message,
            "'max_seq_length' is a case parameter (parameters.yaml:1): vendors may not change it");
  EXPECT_EQ(c.get_int("max_seq_length"), 512);
}

TEST(InferenceConfig, ConfigurationsMustHaveTheSharedKeys) {
  Merge m;
  m.configurations = parse("batch_size: 1\n", "configurations.yaml");
  m.run();
  EXPECT_EQ(m.diags.error_count(), static_cast<int>(inference_shared_keys().size()) - 1) << m.diags.format();
}

TEST(InferenceConfig, LoadsFromDisk) {
  test::TempDir dir;
  dir.write("cases/inference/resnet50/configurations.yaml", kConfigurations);
  dir.write("cases/inference/resnet50/parameters.yaml", "");
  dir.write("vendors/nvidia/inference/resnet50_configurations.yaml", "no_validation: true\nexist_onnx_path: /m.onnx\n");
  dir.write("vendors/cpu/README.md", "");
  Repo repo(dir.path());
  Diagnostics diags;
  auto c = load_inference_config(repo, "resnet50", "nvidia", {"cli", 0}, {}, diags);
  ASSERT_TRUE(c) << diags.format();
  EXPECT_TRUE(c->get_bool("no_validation"));
  EXPECT_EQ(c->get_string("exist_onnx_path"), "/m.onnx");
  // A vendor without a file for the case runs the standard config.
  Diagnostics cpu_diags;
  auto standard = load_inference_config(repo, "resnet50", "cpu", {"cli", 0}, {}, cpu_diags);
  ASSERT_TRUE(standard) << cpu_diags.format();
  EXPECT_FALSE(standard->get_bool("no_validation"));
  Diagnostics bad;
  EXPECT_FALSE(load_inference_config(repo, "resnet5", "nvidia", {"cli", 0}, {}, bad));
  EXPECT_EQ(bad.format(),
            "cli: error: unknown inference case 'resnet5'\n    fix: did you mean 'resnet50'? cases here: resnet50\n");
}

}  // namespace
}  // namespace xpuperf
