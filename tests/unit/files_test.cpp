// core/files.h: folders that a run makes for itself.

#include "xpuperf/core/files.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace xpuperf {
namespace {

TEST(CreateUniqueFolder, ASecondRunInTheSameSecondGetsAFolderOfItsOwn) {
  test::TempDir dir;
  const std::string parent = dir.path() + "/results/deeper";  // made where missing
  const std::string first = create_unique_folder(parent, "run20261129101500");
  const std::string second = create_unique_folder(parent, "run20261129101500");
  const std::string third = create_unique_folder(parent, "run20261129101500");
  EXPECT_EQ(first, parent + "/run20261129101500");
  EXPECT_EQ(second, parent + "/run20261129101500_2");
  EXPECT_EQ(third, parent + "/run20261129101500_3");
  for (const auto& path : {first, second, third}) EXPECT_TRUE(std::filesystem::is_directory(path)) << path;
}

TEST(CreateUniqueFolder, AParentThatCannotHoldFoldersIsAFileErrorNamingIt) {
  test::TempDir dir;
  dir.write("plain", "a file, not a folder\n");
  try {
    create_unique_folder(dir.path() + "/plain", "run1");
    FAIL() << "expected a FileError";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find(dir.path() + "/plain"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xpuperf
