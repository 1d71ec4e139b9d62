#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <sstream>
#include <thread>

#include "test_util.h"
#include "xpuperf/core/vendor_spec.h"
#include "xpuperf/monitor/analysis.h"
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

// Counts the monitor's periods, so that the test waits for them rather than for a time.
class PeriodCounter : public Sampler {
 public:
  std::string name() const override { return "periods"; }
  std::vector<Sample> sample() override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      ++periods_;
    }
    sampled_.notify_all();
    return {};
  }
  void wait_for(int periods) {
    std::unique_lock<std::mutex> lock(mutex_);
    sampled_.wait(lock, [&] { return periods_ >= periods; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable sampled_;
  int periods_ = 0;
};

TEST(Monitor, WritesFlushedRowsEveryPeriod) {
  test::TempDir dir;
  const std::string csv = dir.path() + "/monitor.csv";
  Monitor monitor(csv, "node0", 0.05);
  monitor.add(std::make_unique<CpuSampler>());
  monitor.add(std::make_unique<MemorySampler>());
  auto counter = std::make_unique<PeriodCounter>();
  PeriodCounter& periods = *counter;
  // Sampled last: its first call is start's, which only sets the counters, and its fifth comes in the
  // fourth period, after the first three periods' rows were written and flushed.
  monitor.add(std::move(counter));
  monitor.start();
  const auto periods_on_disk = [&](const std::string& text) {
    int rows = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (line.find("mem_total_bytes") != std::string::npos) ++rows;
    return rows;
  };
  periods.wait_for(5);
  // Rows are on disk while the monitor still runs: the three periods' written and flushed.
  const std::string during = test::read_file(csv);
  monitor.stop();
  const std::string text = test::read_file(csv);
  EXPECT_EQ(text.rfind("time,node,device,metric,value\n", 0), 0u);
  EXPECT_GE(periods_on_disk(during), 3) << during;
  EXPECT_NE(during.find(",node0,host,mem_used_bytes,"), std::string::npos) << during;
  EXPECT_NE(text.find(",node0,cpu,util_percent,"), std::string::npos) << text;
  EXPECT_GE(periods_on_disk(text), 4);  // the three, and one at stop
}

}  // namespace
}  // namespace xpuperf::monitor

namespace xpuperf::monitor {
namespace {

TEST(IpmiSampler, ReadsTheInstantaneousPowerOfARecordedOutput) {
  EXPECT_DOUBLE_EQ(
      IpmiSampler::parse(test::read_file(test::test_path("fixtures/monitor/ipmitool_dcmi_power_reading.txt"))), 412.0);
  EXPECT_LT(IpmiSampler::parse("Could not open device at /dev/ipmi0"), 0.0);
  IpmiSampler missing({"xpuperf-no-such-ipmitool"});
  EXPECT_FALSE(missing.available());
  EXPECT_TRUE(missing.sample().empty());
}

TEST(DiskSampler, BytesFromSectorsWithoutLoopDevices) {
  const auto disks = DiskSampler::parse(
      "   7       0 loop0 5 0 10 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
      " 254       0 vda 100 5 2048 30 50 7 4096 60 0 90 90 0 0 0 0 0 0\n");
  ASSERT_EQ(disks.size(), 1u);
  EXPECT_EQ(disks[0].first, "vda");
  EXPECT_DOUBLE_EQ(disks[0].second.first, 2048.0 * 512);
  EXPECT_DOUBLE_EQ(disks[0].second.second, 4096.0 * 512);
  // A recorded /proc/diskstats of this machine parses too.
  for (const auto& d : DiskSampler::parse(test::read_file(test::test_path("fixtures/monitor/diskstats.txt"))))
    EXPECT_NE(d.first.rfind("loop", 0), 0u);
}

TEST(NetworkSampler, ReceiveAndTransmitBytesWithoutLoopback) {
  const auto nics = NetworkSampler::parse(
      "Inter-|   Receive |  Transmit\n face |bytes packets|bytes\n"
      "    lo: 1000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0\n"
      "  eth0: 5000 20 0 0 0 0 0 0 7000 30 0 0 0 0 0 0\n");
  ASSERT_EQ(nics.size(), 1u);
  EXPECT_EQ(nics[0].first, "eth0");
  EXPECT_DOUBLE_EQ(nics[0].second.first, 5000.0);
  EXPECT_DOUBLE_EQ(nics[0].second.second, 7000.0);
  EXPECT_NO_THROW(NetworkSampler::parse(test::read_file(test::test_path("fixtures/monitor/net_dev.txt"))));
}

TEST(RaplSampler, PowerAndEnergyFromTheCounterAcrossAWrap) {
  test::TempDir dir;
  dir.write("intel-rapl:0/energy_uj", "999000000\n");
  dir.write("intel-rapl:0/max_energy_range_uj", "1000000000\n");
  dir.write("intel-rapl:0:0/energy_uj", "5\n");  // a sub-domain, inside the package
  RaplSampler rapl(dir.path());
  ASSERT_TRUE(rapl.available());
  EXPECT_TRUE(rapl.sample().empty());
  dir.write("intel-rapl:0/energy_uj", "1000000\n");  // wrapped: 2 J later
  const auto s = rapl.sample();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].device, "package0");
  EXPECT_EQ(s[1].metric, "energy_j");
  EXPECT_DOUBLE_EQ(s[1].value, 2.0);
  EXPECT_FALSE(RaplSampler(dir.path() + "/none").available());
}

TEST(CommandSampler, AVendorToolReadWithRegularExpressions) {
  const std::vector<CommandSampler::Metric> metrics = {
      {"npu{n}", "power_w", R"(\|\s*\d+\s+910B\s+\|\s*OK\s+\|\s*([0-9.]+))"},
      {"npu{n}", "temperature_c", R"(\|\s*\d+\s+910B\s+\|\s*OK\s+\|\s*[0-9.]+\s+([0-9]+))"}};
  const auto s = CommandSampler::parse(test::read_file(test::test_path("fixtures/monitor/npu_smi.txt")), metrics);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].device, "npu0");
  EXPECT_DOUBLE_EQ(s[0].value, 93.6);
  EXPECT_EQ(s[1].device, "npu1");
  EXPECT_DOUBLE_EQ(s[1].value, 101.2);
  EXPECT_EQ(s[3].metric, "temperature_c");
  EXPECT_DOUBLE_EQ(s[3].value, 47.0);
}

TEST(CommandSampler, LoadsVendorMonitorYamlAndReportsMistakes) {
  test::TempDir dir;
  const std::string good = dir.write("monitor.yaml",
                                     "command: [echo, \"Power: 42.5 W\"]\nmetrics:\n"
                                     "  - {device: chip, metric: power_w, regex: \"Power: ([0-9.]+)\"}\n");
  std::string error;
  auto sampler = load_command_sampler(good, error);
  ASSERT_TRUE(sampler) << error;
  const auto s = sampler->sample();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].value, 42.5);
  EXPECT_FALSE(load_command_sampler(dir.path() + "/absent.yaml", error));
  const std::string bad = dir.write("bad.yaml", "command: [x]\nmetrics:\n  - {device: d, metric: m, regex: \"([\"}\n");
  EXPECT_FALSE(load_command_sampler(bad, error));
  EXPECT_NE(error.find("bad regex"), std::string::npos) << error;
}

TEST(Analysis, IntegratesPowerAndPrefersEnergyCounters) {
  EXPECT_DOUBLE_EQ(integrate({{0, 100}, {1, 100}, {3, 200}}), 100.0 + 300.0);
  test::TempDir dir;
  // gpu0: power 100 W for 10 s and its counter says 990 J; package0: power only, 50 W for 10 s.
  std::string csv = "time,node,device,metric,value\n";
  for (int t = 0; t <= 10; ++t) {
    const std::string ts = std::to_string(1000 + t);
    csv += ts + ",n0,gpu0,power_w,100\n" + ts + ",n0,gpu0,energy_j," + std::to_string(99 * t) + "\n";
    csv += ts + ",n0,package0,power_w,50\n";
    csv += ts + ",n0,gpu0,mem_used_bytes," + std::to_string(t * 1000) + "\n" + ts + ",n0,gpu0,mem_total_bytes,80000\n";
    csv += ts + ",n0,host,mem_used_bytes," + std::to_string(5000 - t) + "\n";
  }
  csv += "1011,n0,gpu0,power_w\n";  // cut off by a crash
  const auto a = analyse_monitor_csv({dir.write("monitor.csv", csv)});
  EXPECT_DOUBLE_EQ(a.energy_j.at("n0/gpu0"), 990.0);
  EXPECT_DOUBLE_EQ(a.energy_j.at("n0/package0"), 500.0);
  EXPECT_DOUBLE_EQ(a.accelerator_energy_j, 990.0);
  EXPECT_DOUBLE_EQ(a.round_energy_j(), 990.0);
  EXPECT_DOUBLE_EQ(a.peak_device_mem_bytes, 10000.0);
  EXPECT_DOUBLE_EQ(a.total_device_mem_bytes, 80000.0);
  EXPECT_DOUBLE_EQ(a.peak_host_mem_bytes, 5000.0);
  EXPECT_DOUBLE_EQ(a.seconds, 10.0);
  for (const auto& s : a.series)
    if (s.device == "gpu0" && s.metric == "power_w") {
      EXPECT_EQ(s.count, 11u);
      EXPECT_DOUBLE_EQ(s.mean, 100.0);
      EXPECT_DOUBLE_EQ(s.std, 0.0);
    }
}

TEST(Analysis, ChargesARoundOnlyWithTheAcceleratorsItUsed) {
  test::TempDir dir;
  // A 1-GPU round on a 2-GPU host: gpu1 idles at 80 W and holds 600 bytes nobody in the round uses.
  std::string csv = "time,node,device,metric,value\n";
  for (int t = 0; t <= 10; ++t) {
    const std::string ts = std::to_string(1000 + t);
    csv += ts + ",n0,gpu0,power_w,300\n" + ts + ",n0,gpu0,mem_used_bytes,100\n";
    csv += ts + ",n0,gpu1,power_w,80\n" + ts + ",n0,gpu1,mem_used_bytes,600\n";
  }
  const std::string path = dir.write("monitor.csv", csv);
  const auto all = analyse_monitor_csv({path});
  EXPECT_DOUBLE_EQ(all.accelerator_energy_j, 3800.0);
  EXPECT_DOUBLE_EQ(all.peak_device_mem_bytes, 600.0);
  EXPECT_EQ(accelerators_of_round(2), (std::set<std::string>{"gpu0", "gpu1"}));
  const auto one = analyse_monitor_csv({path}, accelerators_of_round(1));
  EXPECT_DOUBLE_EQ(one.accelerator_energy_j, 3000.0);
  EXPECT_DOUBLE_EQ(one.peak_device_mem_bytes, 100.0);
  EXPECT_EQ(one.accelerators_left_out, std::set<std::string>{"gpu1"});
  EXPECT_DOUBLE_EQ(one.energy_j.at("n0/gpu1"), 800.0);  // still reported per device
}

}  // namespace
}  // namespace xpuperf::monitor

namespace xpuperf::monitor {
namespace {

TEST(LibrarySampler, ReadsTheLinesAVendorsLibraryWritesAndRefusesWhatIsNotOne) {
  const auto samples = parse_sample_lines("sim0,mem_used_bytes,1048576\nbroken line\n,x,1\nsim1,util_percent,12.5\n");
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].device, "sim0");
  EXPECT_EQ(samples[0].metric, "mem_used_bytes");
  EXPECT_EQ(samples[0].value, 1048576);
  EXPECT_EQ(samples[1].value, 12.5);
  std::string error;
  EXPECT_FALSE(load_library_sampler("/no/such/libmonitor.so", error));
  EXPECT_NE(error.find("cannot load the monitor library /no/such/libmonitor.so"), std::string::npos) << error;
}

// NVIDIA's monitor library (vendors/nvidia/plugin/monitor) loads on any machine: with NVML and GPUs
// it reports "gpu<i>" rows, without a driver (this machine) none, and never fails the monitor.
TEST(LibrarySampler, NvidiasMonitorLibraryLoadsAndReportsOnlyGpusItFinds) {
  std::string error;
  auto sampler = load_library_sampler(NVIDIA_MONITOR_LIBRARY, error);
  ASSERT_TRUE(sampler) << error;
  EXPECT_EQ(sampler->name(), "nvml");
  for (const auto& s : sampler->sample()) EXPECT_EQ(s.device.rfind("gpu", 0), 0u) << s.device;
}

// Which library a vendor.yaml's `monitor` loads: none for host, its own for library (a missing one
// named with the file), NVIDIA's for nvml and for a folder without vendor.yaml.
TEST(LibrarySampler, TheVendorsMonitorChoosesTheLibrary) {
  std::string error;
  VendorSpec host;
  host.declared = true;
  host.monitor = "host";
  EXPECT_FALSE(vendor_library_sampler(&host, error));
  EXPECT_EQ(error, "");
  VendorSpec missing = host;
  missing.monitor = "library";
  missing.monitor_library = "xpuperf_no_such_monitor";
  missing.file = "/tmp/vendors/acme/vendor.yaml";
  EXPECT_FALSE(vendor_library_sampler(&missing, error));
  EXPECT_NE(error.find("/tmp/vendors/acme/vendor.yaml: monitor_library 'xpuperf_no_such_monitor' not found"),
            std::string::npos)
      << error;
  // NVIDIA's is looked for beside the program: the test binary's folder has none, and says where to find it.
  EXPECT_FALSE(vendor_library_sampler(nullptr, error));
  EXPECT_NE(error.find("NVIDIA's monitor library (NVML) not found (looked for "), std::string::npos) << error;
  EXPECT_NE(error.find("libxpuperf_nvidia_monitor.so"), std::string::npos) << error;
}

}  // namespace
}  // namespace xpuperf::monitor
