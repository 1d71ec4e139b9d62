#include "xpuperf/core/training_config.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "xpuperf/core/model_splits.h"

namespace xpuperf {
namespace {

const char* kBase =
    "vendor: nvidia\n"
    "data_dir: \"\"\n"
    "lr: 0.1\n"
    "train_batch_size: 64\n"
    "amp: false\n"
    "target_value: 0.9\n"
    "layers: [1, 2]\n";
const char* kMutable = "mutable_params: [vendor, lr, train_batch_size, amp, layers]\n";

Config parse(const std::string& text, const std::string& name) {
  Diagnostics diags;
  auto c = load_config_text(text, name, diags);
  EXPECT_TRUE(c) << diags.format();
  return *c;
}

struct Merge {
  Config base = parse(kBase, "_base.yaml");
  Config mutable_params = parse(kMutable, "mutable_params.yaml");
  std::optional<Config> vendor;
  std::vector<Override> plan;
  std::vector<Override> sets;
  Diagnostics diags;

  Config run() {
    TrainingLayers layers;
    layers.base = &base;
    layers.mutable_params = &mutable_params;
    layers.vendor = vendor ? &*vendor : nullptr;
    layers.plan = plan;
    layers.command_line = sets;
    return merge_training_layers(layers, diags);
  }
  void set(const std::string& text) {
    auto o = parse_set_override(text, diags);
    if (o) sets.push_back(*o);
  }
};

TEST(TrainingConfig, LayersInPriorityOrderWithSources) {
  Merge m;
  m.vendor = parse("vendor: acme\nlr: 0.2\ntrain_batch_size: 128\n", "config_X1x1x1.yaml");
  m.plan = {{"vendor", string_node("cpu"), {"plan.yaml", 1}}, {"data_dir", string_node("/data"), {"plan.yaml", 9}}};
  m.set("lr=0.3");
  const Config c = m.run();
  EXPECT_FALSE(m.diags.has_errors()) << m.diags.format();
  EXPECT_EQ(c.get_string("vendor"), "cpu");
  EXPECT_EQ(c.at("vendor").source.str(), "plan.yaml:1");
  EXPECT_EQ(c.get_string("data_dir"), "/data");
  EXPECT_DOUBLE_EQ(c.get_number("lr"), 0.3);
  EXPECT_EQ(c.at("lr").source.str(), "--set lr=0.3");
  EXPECT_EQ(c.get_int("train_batch_size"), 128);
  EXPECT_EQ(c.at("train_batch_size").source.str(), "config_X1x1x1.yaml:3");
  EXPECT_EQ(c.at("amp").source.str(), "_base.yaml:5");
  EXPECT_EQ(c.keys().size(), 7u);  // nothing added, nothing lost
}

TEST(TrainingConfig, VendorMayNotChangeImmutableKey) {
  Merge m;
  m.vendor = parse("vendor: acme\ntarget_value: 0.5\n", "v.yaml");
  const Config c = m.run();
  ASSERT_EQ(m.diags.error_count(), 1);
  const Diagnostic& d = m.diags.items()[0];
  EXPECT_EQ(d.where.str(), "v.yaml:2");
  EXPECT_EQ(d.message, "'target_value' is not mutable: a vendor config may not change it");
  EXPECT_NE(d.hint.find("amp, layers, lr, train_batch_size, vendor"), std::string::npos);
  EXPECT_DOUBLE_EQ(c.get_number("target_value"), 0.9);
}

TEST(TrainingConfig, VendorKeyMustExistInBase) {
  Merge m;
  m.vendor = parse("vendor: acme\ntrain_bach_size: 32\n", "v.yaml");
  m.run();
  ASSERT_EQ(m.diags.error_count(), 1);
  EXPECT_EQ(format_diagnostic(m.diags.items()[0]),
            "v.yaml:2: error: 'train_bach_size' is not a parameter of this case (the vendor config sets it, "
            "_base.yaml does not define it)\n    fix: did you mean 'train_batch_size'?");
}

TEST(TrainingConfig, OverridesKeepTheKindOfTheDefault) {
  Merge m;
  m.vendor = parse("vendor: acme\nlr: fast\ntrain_batch_size: 6.5\namp: 1\nlayers: 3\n", "v.yaml");
  m.run();
  EXPECT_EQ(m.diags.error_count(), 4) << m.diags.format();
  EXPECT_EQ(m.diags.items()[0].message, "'lr' must be a number, got \"fast\"");
  EXPECT_EQ(m.diags.items()[0].hint, "the default is 0.1 (_base.yaml:3)");
}

TEST(TrainingConfig, IntegerValuesAreAcceptedForFloats) {
  Merge m;
  m.vendor = parse("vendor: acme\nlr: 1\ntrain_batch_size: 32.0\n", "v.yaml");
  m.run();
  EXPECT_FALSE(m.diags.has_errors()) << m.diags.format();
}

TEST(TrainingConfig, MutableParamsMustBeInBaseAndIncludeVendor) {
  Merge m;
  m.mutable_params = parse("mutable_params:\n  - lr\n  - warmup\n", "mutable_params.yaml");
  m.run();
  EXPECT_EQ(m.diags.error_count(), 2) << m.diags.format();
  EXPECT_EQ(m.diags.items()[0].where.str(), "mutable_params.yaml:3");
  EXPECT_NE(m.diags.items()[0].message.find("'warmup' is listed as mutable"), std::string::npos);
  EXPECT_NE(m.diags.items()[1].message.find("'vendor' must be listed"), std::string::npos);
}

TEST(TrainingConfig, BaseMustDefineVendorAndDataDir) {
  Merge m;
  m.base = parse("lr: 0.1\n", "_base.yaml");
  m.mutable_params = parse("mutable_params: [lr]\n", "mutable_params.yaml");
  m.run();
  const std::string text = m.diags.format();
  EXPECT_NE(text.find("missing required parameter 'vendor'"), std::string::npos) << text;
  EXPECT_NE(text.find("missing required parameter 'data_dir'"), std::string::npos) << text;
}

TEST(TrainingConfig, CommandLineOverrides) {
  Merge m;
  m.set("target_value=0.95");  // allowed, but the result is no longer the standard case
  m.set("lrr=0.2");
  m.set("train_batch_size=big");
  m.set("novalue");
  const Config c = m.run();
  EXPECT_DOUBLE_EQ(c.get_number("target_value"), 0.95);
  EXPECT_EQ(m.diags.error_count(), 3) << m.diags.format();
  const std::string text = m.diags.format();
  EXPECT_NE(text.find("--set novalue: error: expected key=value"), std::string::npos) << text;
  EXPECT_NE(text.find("--set lrr=0.2: error: 'lrr' is not a parameter"), std::string::npos) << text;
  EXPECT_NE(text.find("did you mean 'lr'?"), std::string::npos) << text;
  EXPECT_NE(text.find("--set train_batch_size=big: error: 'train_batch_size' must be an integer"), std::string::npos);
  EXPECT_NE(text.find("--set target_value=0.95: warning: 'target_value' is not a mutable parameter"),
            std::string::npos);
}

// A content tree on disk, for the checks that look for files.
class TrainingRepo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir.write("cases/training/toy/libtorch/config/_base.yaml", kBase);
    dir.write("cases/training/toy/libtorch/config/mutable_params.yaml", kMutable);
    dir.write("vendors/acme/training/toy-libtorch/config/config_X1x1x1.yaml", "vendor: acme\nlr: 0.5\n");
    dir.write("vendors/acme/training/toy-libtorch/config/config_X1x1x8.yaml", "vendor: acme\n");
  }
  std::optional<Config> load(const std::string& key_text, const std::string& vendor = "acme") {
    auto key = parse_case_key(key_text, {"plan.yaml", 3}, diags);
    EXPECT_TRUE(key);
    TrainingConfigRequest request{*key, vendor, "/data/toy", {"plan.yaml", 3}, {}, {}, {}};
    return load_training_config(repo, request, diags);
  }
  test::TempDir dir;
  Repo repo{dir.path()};
  Diagnostics diags;
};

TEST_F(TrainingRepo, LoadsAndMerges) {
  auto c = load("toy:libtorch:X1:1:1:1");
  ASSERT_TRUE(c) << diags.format();
  EXPECT_DOUBLE_EQ(c->get_number("lr"), 0.5);
  EXPECT_EQ(c->get_string("vendor"), "acme");
  EXPECT_EQ(c->get_string("data_dir"), "/data/toy");
  EXPECT_EQ(c->at("data_dir").source.str(), "plan.yaml:3");
}

TEST_F(TrainingRepo, UnknownCaseListsTheCases) {
  EXPECT_FALSE(load("tyo:libtorch:X1:1:1:1"));
  EXPECT_EQ(diags.format(),
            "plan.yaml:3: error: unknown training case 'tyo'\n    fix: did you mean 'toy'? cases here: toy\n");
}

TEST_F(TrainingRepo, UnknownFrameworkListsTheFrameworks) {
  EXPECT_FALSE(load("toy:pytorch:X1:1:1:1"));
  EXPECT_EQ(diags.format(),
            "plan.yaml:3: error: case 'toy' has no framework 'pytorch'\n    fix: frameworks of toy: libtorch\n");
}

TEST_F(TrainingRepo, MissingVendorFolder) {
  EXPECT_FALSE(load("toy:libtorch:X1:1:1:1", "nobody"));
  EXPECT_NE(diags.format().find("vendor folder " + dir.path() + "/vendors/nobody does not exist"), std::string::npos)
      << diags.format();
  EXPECT_NE(diags.format().find("vendors here: acme"), std::string::npos);
}

TEST_F(TrainingRepo, MissingHardwareConfigListsTheConfigsThereAre) {
  EXPECT_FALSE(load("toy:libtorch:X1:2:8:1"));
  const std::string text = diags.format();
  EXPECT_NE(text.find("vendor 'acme' has no X1x2x8 config for toy:libtorch (expected "), std::string::npos) << text;
  EXPECT_NE(text.find("config_X1x2x8.yaml"), std::string::npos) << text;
  EXPECT_NE(text.find("use a configured hardware: X1x1x1, X1x1x8"), std::string::npos) << text;
}

TEST_F(TrainingRepo, BrokenVendorFileIsReportedWithItsLine) {
  dir.write("vendors/acme/training/toy-libtorch/config/config_X1x1x1.yaml", "vendor: acme\nlr: [0.5\n");
  EXPECT_FALSE(load("toy:libtorch:X1:1:1:1"));
  EXPECT_NE(diags.format().find("config_X1x1x1.yaml:3: error: invalid YAML"), std::string::npos) << diags.format();
}

// What a case's model splits into is read from its model_splits.yaml, without the model's code.
TEST(ModelSplits, AreReadFromTheCasesFileAndABadFileIsNamed) {
  Diagnostics diags;
  const auto gpt2 = load_model_splits(Repo(XPUPERF_SOURCE_DIR), "gpt2", "libtorch", diags);
  ASSERT_TRUE(gpt2) << diags.format();
  EXPECT_TRUE(gpt2->tensor_parallel);
  ASSERT_EQ(gpt2->tensor_divides.size(), 1u);
  EXPECT_EQ(gpt2->tensor_divides[0].key, "n_head");
  EXPECT_EQ(gpt2->tensor_divides[0].what, "attention heads");
  EXPECT_TRUE(gpt2->pipeline_parallel);
  const auto lenet5 = load_model_splits(Repo(XPUPERF_SOURCE_DIR), "lenet5", "libtorch", diags);
  ASSERT_TRUE(lenet5);
  EXPECT_FALSE(lenet5->tensor_parallel || lenet5->pipeline_parallel);
  EXPECT_FALSE(diags.has_errors()) << diags.format();

  test::TempDir dir;
  EXPECT_FALSE(load_model_splits(Repo(dir.path()), "toy", "libtorch", diags)) << "no file: not declared";
  dir.write("cases/training/toy/libtorch/model_splits.yaml",
            "tensor_paralel:\n  n_head: heads\npipeline_parallel: 4\n");
  load_model_splits(Repo(dir.path()), "toy", "libtorch", diags);
  EXPECT_NE(diags.format().find("model_splits.yaml:1: error: 'tensor_paralel' is not what a model declares"),
            std::string::npos)
      << diags.format();
  EXPECT_NE(diags.format().find("did you mean 'tensor_parallel'?"), std::string::npos) << diags.format();
  EXPECT_NE(diags.format().find("model_splits.yaml:3: error: 'pipeline_parallel' must be a map"), std::string::npos)
      << diags.format();
}

}  // namespace
}  // namespace xpuperf
