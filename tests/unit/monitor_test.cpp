#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "test_util.h"
#include "xpuperf/monitor/sampler.h"

namespace xpuperf::monitor {
namespace {

TEST(CpuSampler, UtilisationFromTwoReadingsOfProcStat) {
  test::TempDir dir;
  const std::string path = dir.write("stat", "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 50 0 50 400 0 0 0 0 0 0\nintr 1\n");
  CpuSampler sampler(path);
  EXPECT_TRUE(sampler.sample().empty());  // the first reading only sets the counters
  // 100 more busy (user+system) and 300 more idle: 25 %.
  dir.write("stat", "cpu  150 0 150 1100 0 0 0 0 0 0\ncpu0 100 0 100 400 0 0 0 0 0 0\n");
  const auto samples = sampler.sample();
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].device, "cpu");
  EXPECT_EQ(samples[0].metric, "util_percent");
  EXPECT_DOUBLE_EQ(samples[0].value, 25.0);
  EXPECT_EQ(samples[1].device, "cpu0");
  EXPECT_DOUBLE_EQ(samples[1].value, 100.0);
}

TEST(CpuSampler, IowaitCountsAsIdle) {
  const auto t = CpuSampler::parse("cpu  10 0 10 50 30 0 0 0 0 0\n");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_DOUBLE_EQ(t[0].total, 100.0);
  EXPECT_DOUBLE_EQ(t[0].busy, 20.0);
}

TEST(MemorySampler, UsedIsTotalMinusAvailableInBytes) {
  const auto s = MemorySampler::parse("MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    400 kB\n");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].metric, "mem_used_bytes");
  EXPECT_DOUBLE_EQ(s[0].value, 600.0 * 1024);
  EXPECT_DOUBLE_EQ(s[1].value, 1000.0 * 1024);
  EXPECT_TRUE(MemorySampler::parse("garbage").empty());
}

TEST(Monitor, WritesFlushedRowsEveryPeriod) {
  test::TempDir dir;
  const std::string csv = dir.path() + "/monitor.csv";
  Monitor monitor(csv, "node0", 0.05);
  monitor.add(std::make_unique<CpuSampler>());
  monitor.add(std::make_unique<MemorySampler>());
  monitor.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Rows are on disk while the monitor still runs.
  const std::string during = test::read_file(csv);
  monitor.stop();
  const std::string text = test::read_file(csv);
  EXPECT_EQ(text.rfind("time,node,device,metric,value\n", 0), 0u);
  EXPECT_NE(during.find(",node0,host,mem_used_bytes,"), std::string::npos) << during;
  EXPECT_NE(text.find(",node0,cpu,util_percent,"), std::string::npos) << text;
  int rows = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find("mem_total_bytes") != std::string::npos) ++rows;
  EXPECT_GE(rows, 4);  // ~6 periods, and one at stop
}

}  // namespace
}  // namespace xpuperf::monitor
