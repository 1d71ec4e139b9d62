#pragma once
// A monitored source and the thread that samples all sources into monitor.csv. This version
// has CPU and memory; the monitors issue adds power, disks, network and accelerators (NVML).

#include <atomic>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace xpuperf::monitor {

struct Sample {
  std::string device;  // "cpu", "cpu3", "host", "gpu0", ...
  std::string metric;  // "util_percent", "mem_used_bytes", ...
  double value = 0;
};

class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual std::string name() const = 0;
  // The source's values now. A source that keeps counters reports rates since its last call.
  virtual std::vector<Sample> sample() = 0;
};

// CPU utilisation in percent, total ("cpu") and per core ("cpu<N>"), from /proc/stat.
class CpuSampler : public Sampler {
 public:
  explicit CpuSampler(std::string proc_stat = "/proc/stat") : path_(std::move(proc_stat)) {}
  std::string name() const override { return "cpu"; }
  std::vector<Sample> sample() override;

  struct Times {
    std::string cpu;
    double busy = 0, total = 0;
  };
  static std::vector<Times> parse(const std::string& proc_stat_text);

 private:
  std::string path_;
  std::vector<Times> last_;
};

// Host memory in bytes: used (MemTotal - MemAvailable) and total, from /proc/meminfo.
class MemorySampler : public Sampler {
 public:
  explicit MemorySampler(std::string meminfo = "/proc/meminfo") : path_(std::move(meminfo)) {}
  std::string name() const override { return "memory"; }
  std::vector<Sample> sample() override;
  static std::vector<Sample> parse(const std::string& meminfo_text);

 private:
  std::string path_;
};

// Samples every source each `period_s` on a thread of its own and appends
// "time,node,device,metric,value" rows to a CSV file, flushed every period, so a crash loses at
// most one period.
class Monitor {
 public:
  Monitor(std::string csv_path, std::string node, double period_s);
  ~Monitor();  // stops
  void add(std::unique_ptr<Sampler> sampler);
  void start();
  void stop();

 private:
  void loop();
  void write_samples();

  std::string path_, node_;
  double period_s_;
  std::vector<std::unique_ptr<Sampler>> samplers_;
  std::ofstream csv_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::mutex wake_mutex_;
};

}  // namespace xpuperf::monitor
