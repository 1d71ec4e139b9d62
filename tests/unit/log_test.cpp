#include "xpuperf/core/log.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace xpuperf {
namespace {

TEST(Log, ParsesLevelNames) {
  log::Level level = log::Level::Info;
  EXPECT_TRUE(log::parse_level("debug", level));
  EXPECT_EQ(level, log::Level::Debug);
  EXPECT_TRUE(log::parse_level("warn", level));
  EXPECT_EQ(level, log::Level::Warning);
  EXPECT_FALSE(log::parse_level("loud", level));
}

TEST(Log, WritesMessagesAtOrAboveTheLevelToAFile) {
  test::TempDir dir;
  const std::string path = dir.path() + "/run.log";
  log::add_file(path);
  log::set_level(log::Level::Info);
  log::debug("hidden detail");
  log::info("step 1 {braces} stay as written");
  log::error("a rank failed");
  const std::string text = test::read_file(path);
  EXPECT_EQ(text.find("hidden detail"), std::string::npos) << text;
  EXPECT_NE(text.find("[info] step 1 {braces} stay as written"), std::string::npos) << text;
  EXPECT_NE(text.find("[error] a rank failed"), std::string::npos) << text;
}

}  // namespace
}  // namespace xpuperf
