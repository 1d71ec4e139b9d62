#include "xpuperf/core/case_key.h"

#include <gtest/gtest.h>

namespace xpuperf {
namespace {

TEST(CaseKey, ParsesSixFields) {
  Diagnostics diags;
  auto key = parse_case_key("resnet50:libtorch:H100:2:8:3", {"p.yaml", 4}, diags);
  ASSERT_TRUE(key) << diags.format();
  EXPECT_EQ(key->model, "resnet50");
  EXPECT_EQ(key->framework, "libtorch");
  EXPECT_EQ(key->hardware, "H100");
  EXPECT_EQ(key->nnodes, 2);
  EXPECT_EQ(key->nproc, 8);
  EXPECT_EQ(key->repeat, 3);
  EXPECT_EQ(key->world_size(), 16);
  EXPECT_EQ(key->str(), "resnet50:libtorch:H100:2:8:3");
  EXPECT_EQ(key->dir_name(), "resnet50_libtorch_H100_2_8_3");
  EXPECT_EQ(key->config_name(), "H100x2x8");
}

TEST(CaseKey, WrongFieldCountNamesTheForm) {
  Diagnostics diags;
  EXPECT_FALSE(parse_case_key("lenet5:libtorch:CPU:1:1", {"p.yaml", 7}, diags));
  ASSERT_EQ(diags.error_count(), 1);
  EXPECT_EQ(diags.format(),
            "p.yaml:7: error: case key 'lenet5:libtorch:CPU:1:1' has 5 fields, expected 6\n"
            "    fix: write it as model:framework:hardware:nnodes:nproc:repeat, e.g. lenet5:libtorch:CPU:1:1:3\n");
}

TEST(CaseKey, RejectsBadCountsAndNames) {
  for (const char* bad : {"a:b:c:0:1:1", "a:b:c:1:-1:1", "a:b:c:1:1:x", "a:b:c:1:1:", "a:b:c:1.5:1:1", "a b:c:d:1:1:1",
                          ":b:c:1:1:1", "a:b;rm:c:1:1:1", "../x:b:c:1:1:1"}) {
    Diagnostics diags;
    EXPECT_FALSE(parse_case_key(bad, {"p.yaml", 1}, diags)) << bad;
    EXPECT_TRUE(diags.has_errors()) << bad;
  }
}

TEST(CaseKey, ReportsEveryBadField) {
  Diagnostics diags;
  EXPECT_FALSE(parse_case_key("a:b:c:0:0:0", {"p.yaml", 1}, diags));
  EXPECT_EQ(diags.error_count(), 3);
}

TEST(CaseKey, SafeNames) {
  EXPECT_TRUE(is_safe_name("pytorch_1.13"));
  EXPECT_TRUE(is_safe_name("A100-SXM4"));
  EXPECT_FALSE(is_safe_name(""));
  EXPECT_FALSE(is_safe_name(".."));
  EXPECT_FALSE(is_safe_name("-rf"));
  EXPECT_FALSE(is_safe_name("a/b"));
  EXPECT_FALSE(is_safe_name("a$b"));
}

}  // namespace
}  // namespace xpuperf
