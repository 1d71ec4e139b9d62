#pragma once
// A monitored source and the thread that samples all sources into monitor.csv. This version
// has CPU and memory; the monitors issue adds power, disks, network and accelerators (a vendor's
// monitor library: NVIDIA's reads NVML).

#include <atomic>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace xpuperf {
struct VendorSpec;
}

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

// Read bytes/s and write bytes/s per whole disk, from /proc/diskstats (loop and ram devices
// left out; partitions left out when `sys_block` lists the whole disks).
class DiskSampler : public Sampler {
 public:
  explicit DiskSampler(std::string diskstats = "/proc/diskstats", std::string sys_block = "/sys/block")
      : path_(std::move(diskstats)), sys_block_(std::move(sys_block)) {}
  std::string name() const override { return "disk"; }
  std::vector<Sample> sample() override;
  // Bytes read and written so far per disk.
  static std::vector<std::pair<std::string, std::pair<double, double>>> parse(const std::string& text);

 private:
  std::string path_, sys_block_;
  std::vector<std::pair<std::string, std::pair<double, double>>> last_;
  double last_time_ = 0;
};

// Received and sent bytes/s per network interface (loopback left out), from /proc/net/dev.
class NetworkSampler : public Sampler {
 public:
  explicit NetworkSampler(std::string net_dev = "/proc/net/dev") : path_(std::move(net_dev)) {}
  std::string name() const override { return "network"; }
  std::vector<Sample> sample() override;
  static std::vector<std::pair<std::string, std::pair<double, double>>> parse(const std::string& text);

 private:
  std::string path_;
  std::vector<std::pair<std::string, std::pair<double, double>>> last_;
  double last_time_ = 0;
};

// CPU package power and energy from RAPL (/sys/class/powercap/intel-rapl:N): power_w over the
// period and energy_j since the monitor started, per package ("package<N>").
class RaplSampler : public Sampler {
 public:
  explicit RaplSampler(std::string powercap = "/sys/class/powercap");
  std::string name() const override { return "rapl"; }
  std::vector<Sample> sample() override;
  bool available() const { return !domains_.empty(); }

 private:
  struct Domain {
    std::string device, energy_file;
    double range_uj = 0, last_uj = -1, total_j = 0;
  };
  std::vector<Domain> domains_;
  double last_time_ = 0;
};

// Whole-system power from the BMC: `ipmitool dcmi power reading`.
class IpmiSampler : public Sampler {
 public:
  explicit IpmiSampler(std::vector<std::string> command = {"ipmitool", "dcmi", "power", "reading"});
  std::string name() const override { return "ipmi"; }
  std::vector<Sample> sample() override;
  bool available() const { return available_; }
  // The watts of "Instantaneous power reading: 230 Watts"; negative when absent.
  static double parse(const std::string& text);

 private:
  std::vector<std::string> command_;
  bool available_ = false;
};

// Samples every source each `period_s` on a thread of its own and appends
// "time,node,device,metric,value" rows to a CSV file, flushed every period, so a crash loses at
// most one period.
class Monitor {
 public:
  Monitor(std::string csv_path, std::string node, double period_s);
  ~Monitor();  // stops
  void add(std::unique_ptr<Sampler> sampler);
  // Records only these accelerators (not the host's others): for node agents sharing a host.
  void only_accelerators(std::set<std::string> devices) { only_ = std::move(devices); }
  void start();
  void stop();

 private:
  void loop();
  void write_samples();

  std::string path_, node_;
  std::set<std::string> only_;  // empty: every accelerator
  double period_s_;
  std::vector<std::unique_ptr<Sampler>> samplers_;
  std::ofstream csv_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::mutex wake_mutex_;
};

// A vendor's own tool, declared in vendors/<v>/monitor.yaml instead of written in C++:
//   command: [npu-smi, info]          # run every period (argument vector, no shell)
//   metrics:
//     - {device: "npu{n}", metric: power_w, regex: "Power\\(W\\)\\s*:\\s*([0-9.]+)"}
// Each regex's first group is the value; {n} in the device numbers repeated matches 0, 1, ...
class CommandSampler : public Sampler {
 public:
  struct Metric {
    std::string device, metric, regex;
  };
  CommandSampler(std::vector<std::string> command, std::vector<Metric> metrics, double limit_s = 5);
  std::string name() const override { return "command"; }
  std::vector<Sample> sample() override;
  // The samples `metrics` find in one output of the command.
  static std::vector<Sample> parse(const std::string& text, const std::vector<Metric>& metrics);

 private:
  std::vector<std::string> command_;
  std::vector<Metric> metrics_;
  double limit_s_;
};

// Reads vendors/<v>/monitor.yaml (CommandSampler's format); problems go to `diags`. Nothing when
// the file does not exist.
std::unique_ptr<Sampler> load_command_sampler(const std::string& path, std::string& error);

// A vendor's monitor library (sampler_plugin.h) at `path`; null with `error` set when it cannot be loaded.
std::unique_ptr<Sampler> load_library_sampler(const std::string& path, std::string& error);
// Lines "device,metric,value" as samples; malformed lines are left out.
std::vector<Sample> parse_sample_lines(const std::string& text);

// The host's samplers: CPU, memory, disks, network, RAPL and IPMI when present.
std::vector<std::unique_ptr<Sampler>> default_samplers();

// The accelerators' sampler a vendor brings (vendor.yaml's `monitor`): its monitor library
// (`library`: `monitor_library`), NVIDIA's (`nvml`, and a vendor folder without vendor.yaml, `spec`
// null or undeclared: NVML through libxpuperf_nvidia_monitor.so beside this program,
// vendors/nvidia/plugin/monitor), none for `host` and `command`. Null with `error` set when the
// library is missing or is not a monitor library; null without an error when there is none to load.
std::unique_ptr<Sampler> vendor_library_sampler(const VendorSpec* spec, std::string& error);

// Runs a command and returns what it printed (stdout and stderr), or nothing when it could not
// run or failed.
std::optional<std::string> command_output(const std::vector<std::string>& argv, double limit_s);

}  // namespace xpuperf::monitor
