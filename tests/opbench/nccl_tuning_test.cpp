// NCCL's tuning lines read as the algorithm and protocol of each collective (opbench/nccl_tuning.h).

#include "xpuperf/opbench/nccl_tuning.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace xpuperf::opbench {
namespace {

const char* kLog =
    "host:123:456 [0] NCCL INFO AllReduce: 268435456 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..31}\n"
    "host:123:456 [0] NCCL INFO AllReduce: 268435456 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..31}\n"
    "host:123:456 [0] NCCL INFO AllReduce: 1024 Bytes -> Algo NVLS proto LL channel{Lo..Hi}={0..0}\n"
    "host:123:456 [0] NCCL INFO AllGather: 4096 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}\n";

TEST(NcclTuning, EachCollectivesChoicesAreCounted) {
  const auto all_reduce = nccl_choices(kLog, "AllReduce");
  EXPECT_EQ(all_reduce, (std::map<std::string, int>{{"NVLS/LL", 1}, {"RING/SIMPLE", 2}}));
  EXPECT_EQ(nccl_choice_text(all_reduce), "RING/SIMPLE ×2, NVLS/LL ×1");
  EXPECT_EQ(nccl_choice_text(nccl_choices(kLog, "AllGather")), "RING/LL");
  EXPECT_EQ(nccl_choice_text(nccl_choices(kLog, "ReduceScatter")), "");
}

TEST(NcclTuning, TheLogIsReadAsItGrowsAndAUsersSettingStands) {
  unsetenv("NCCL_DEBUG");
  const std::string path = (std::filesystem::temp_directory_path() / "xpuperf-nccl-test.log").string();
  NcclTuningLog log(path);
  EXPECT_EQ(log.why_not(), "");
  EXPECT_STREQ(std::getenv("NCCL_DEBUG"), "INFO");
  EXPECT_STREQ(std::getenv("NCCL_DEBUG_SUBSYS"), "TUNING");
  EXPECT_EQ(std::string(std::getenv("NCCL_DEBUG_FILE")), path);
  std::ofstream(path, std::ios::app) << kLog << "host:1:2 [0] NCCL WARN something\nhost NCCL INFO AllGa";
  EXPECT_EQ(log.take("AllReduce"), "RING/SIMPLE ×2, NVLS/LL ×1");
  EXPECT_EQ(log.take("AllReduce"), "") << "lines are read once";
  std::ofstream(path, std::ios::app) << "ther: 8 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..0}\n";
  EXPECT_EQ(log.take("AllGather"), "TREE/LL") << "a line half written is read when it is whole";
  EXPECT_EQ(log.take_warnings(), std::vector<std::string>{"host:1:2 [0] NCCL WARN something"});
  std::filesystem::remove(path);
  NcclTuningLog users("/nonexistent/x.log");  // NCCL_DEBUG is set now, as if by the user
  EXPECT_NE(users.why_not().find("NCCL_DEBUG is set (INFO)"), std::string::npos);
  EXPECT_EQ(users.take("AllReduce"), "");
  unsetenv("NCCL_DEBUG");
  unsetenv("NCCL_DEBUG_SUBSYS");
  unsetenv("NCCL_DEBUG_FILE");
}

}  // namespace
}  // namespace xpuperf::opbench
