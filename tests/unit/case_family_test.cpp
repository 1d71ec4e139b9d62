// The four case families behind one interface (core/case_family.h): how each is written, the
// command its ranks run, the devices a rank sees and its vendor config folder.

#include "xpuperf/core/case_family.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"
#include "xpuperf/core/base_config.h"
#include "xpuperf/core/inference_config.h"
#include "xpuperf/core/operation_config.h"

namespace xpuperf {
namespace {

CaseKey key_of(const std::string& text) {
  Diagnostics diags;
  std::optional<CaseKey> key;
  if (text.rfind("infer:", 0) == 0)
    key = parse_inference_key(text.substr(6), {"test", 1}, diags);
  else if (text.rfind("base:", 0) == 0)
    key = parse_base_key(text.substr(5), {"test", 1}, diags);
  else if (text.rfind("op:", 0) == 0)
    key = parse_operation_key(text.substr(3), {"test", 1}, diags);
  else
    key = parse_case_key(text, {"test", 1}, diags);
  EXPECT_TRUE(key) << text;
  return key ? *key : CaseKey{};
}

TEST(CaseFamily, EachKeyHasOneFamilyWrittenAsThePlanWritesIt) {
  const CaseKey training = key_of("lenet5:libtorch:CPU:1:2:1");
  const CaseKey inference = key_of("infer:resnet50:libtorch:H200:1");
  const CaseKey base = key_of("base:computation-BF16:H200:1:1:3");
  EXPECT_STREQ(case_family(training).name(), "training");
  EXPECT_STREQ(case_family(inference).name(), "inference");
  EXPECT_STREQ(case_family(base).name(), "base");
  EXPECT_EQ(case_family(training).key_text(training), "lenet5:libtorch:CPU:1:2:1");
  EXPECT_EQ(case_family(inference).key_text(inference), "resnet50:libtorch:H200:1");
  EXPECT_EQ(case_family(base).key_text(base), "computation-BF16:H200:1:1:3");
  EXPECT_TRUE(case_family(training).reads_data_dir());
  EXPECT_FALSE(case_family(inference).reads_data_dir());
  EXPECT_FALSE(case_family(base).reads_data_dir());
  const CaseKey op = key_of("op:mm:H200:3");
  EXPECT_STREQ(case_family(op).name(), "operation");
  EXPECT_EQ(case_family(op).key_text(op), "mm:H200:3");
  EXPECT_EQ(op.repeat, 3);
  EXPECT_EQ(op.nproc, 1);
  EXPECT_FALSE(case_family(op).reads_data_dir());
  // A collective's key names its ranks; written back as it was.
  const CaseKey collective = key_of("op:all_reduce:H200:1:2:3");
  EXPECT_STREQ(case_family(collective).name(), "operation");
  EXPECT_EQ(collective.nproc, 2);
  EXPECT_EQ(collective.repeat, 3);
  EXPECT_EQ(case_family(collective).key_text(collective), "all_reduce:H200:1:2:3");
}

TEST(CaseFamily, AnOperatorKeyIsOpHardwareRepeat) {
  Diagnostics diags;
  EXPECT_FALSE(parse_operation_key("mm:H200", {"plan.yaml", 7}, diags));
  EXPECT_NE(diags.format().find("plan.yaml:7: error: operator case 'mm:H200' must be op:hardware:repeat (or "
                                "op:hardware:nnodes:nproc:repeat)"),
            std::string::npos)
      << diags.format();
  Diagnostics zero;
  EXPECT_FALSE(parse_operation_key("mm:H200:0", {"plan.yaml", 8}, zero));
  EXPECT_TRUE(zero.has_errors());
}

TEST(CaseFamily, EachRankRunsItsFamilysCommand) {
  const RankCommand c{"/repo", "nvidia", "/data", "/out", {"lr=0.1"}};
  const CaseKey training = key_of("lenet5:libtorch:CPU:1:2:1");
  EXPECT_EQ(case_family(training).rank_argv(training, c),
            (std::vector<std::string>{"/proc/self/exe", "--root",   "/repo",    "train",  "--case",     "lenet5",
                                      "--framework",    "libtorch", "--vendor", "nvidia", "--hardware", "CPU",
                                      "--nnodes",       "1",        "--nproc",  "2",      "--data-dir", "/data",
                                      "--set",          "lr=0.1"}));
  const CaseKey inference = key_of("infer:resnet50:libtorch:H200:1");
  EXPECT_EQ(case_family(inference).rank_argv(inference, c),
            (std::vector<std::string>{"/proc/self/exe", "--root", "/repo", "infer", "--case", "resnet50", "--framework",
                                      "libtorch", "--vendor", "nvidia", "--hardware", "H200", "--out", "/out", "--set",
                                      "lr=0.1"}));
  const CaseKey base = key_of("base:computation-BF16:H200:1:1:3");
  EXPECT_EQ(case_family(base).rank_argv(base, c),
            (std::vector<std::string>{"/proc/self/exe", "--root", "/repo", "base", "computation-BF16", "--vendor",
                                      "nvidia", "--hardware", "H200", "--set", "lr=0.1"}));
  // An inaccurate row is a verdict in the report, not a failed round.
  const CaseKey op = key_of("op:mm:H200:3");
  EXPECT_EQ(case_family(op).rank_argv(op, c),
            (std::vector<std::string>{"/proc/self/exe", "--root", "/repo", "op", "--case", "mm", "--vendor", "nvidia",
                                      "--hardware", "H200", "--inaccurate-ok", "--set", "lr=0.1"}));
}

TEST(CaseFamily, OnlyAWholeHostBaseCaseSeesEveryDeviceAndOnlyTrainingHasAVendorFolder) {
  Diagnostics diags;
  const auto whole = load_config_text("whole_host: true\n", "base.yaml", diags);
  ASSERT_TRUE(whole);
  const CaseKey training = key_of("lenet5:libtorch:CPU:1:2:1");
  const CaseKey base = key_of("base:computation-BF16:H200:1:1:3");
  EXPECT_TRUE(case_family(base).sees_every_device(*whole));
  EXPECT_FALSE(case_family(training).sees_every_device(*whole));
  const Repo repo("/repo");
  EXPECT_EQ(case_family(training).vendor_config_dir(repo, "nvidia", training),
            repo.vendor_dir("nvidia") + "/training/lenet5-libtorch/config");
  EXPECT_EQ(case_family(base).vendor_config_dir(repo, "nvidia", base), "");
}

}  // namespace
}  // namespace xpuperf
