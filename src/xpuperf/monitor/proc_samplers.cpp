// Samplers of /proc and /sys: disks, network, RAPL; and IPMI through ipmitool.

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>

#include "xpuperf/core/files.h"
#include "xpuperf/core/process.h"
#include "xpuperf/monitor/sampler.h"

namespace xpuperf::monitor {
namespace fs = std::filesystem;

namespace {

using Counters = std::vector<std::pair<std::string, std::pair<double, double>>>;

// Rates of two counters per name between two readings.
std::vector<Sample> rates(const Counters& now, const Counters& before, double seconds, const char* first_metric,
                          const char* second_metric) {
  std::vector<Sample> out;
  if (seconds <= 0) return out;
  for (const auto& [name, values] : now) {
    for (const auto& [old_name, old_values] : before) {
      if (old_name != name) continue;
      out.push_back({name, first_metric, (values.first - old_values.first) / seconds});
      out.push_back({name, second_metric, (values.second - old_values.second) / seconds});
    }
  }
  return out;
}

}  // namespace

Counters DiskSampler::parse(const std::string& text) {
  Counters out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string major, minor, name;
    double reads, reads_merged, sectors_read, ms_read, writes, writes_merged, sectors_written;
    if (!(f >> major >> minor >> name >> reads >> reads_merged >> sectors_read >> ms_read >> writes >> writes_merged >>
          sectors_written))
      continue;
    if (name.rfind("loop", 0) == 0 || name.rfind("ram", 0) == 0) continue;
    out.push_back({name, {sectors_read * 512.0, sectors_written * 512.0}});  // the kernel counts 512-byte sectors
  }
  return out;
}

std::vector<Sample> DiskSampler::sample() {
  Counters now;
  std::error_code ec;
  for (auto& entry : parse(read_file_or_empty(path_)))
    if (sys_block_.empty() || fs::exists(sys_block_ + "/" + entry.first, ec)) now.push_back(entry);
  const double t = steady_seconds();
  auto out = rates(now, last_, t - last_time_, "read_bytes_per_s", "write_bytes_per_s");
  last_ = now;
  last_time_ = t;
  return out;
}

Counters NetworkSampler::parse(const std::string& text) {
  Counters out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name == "lo") continue;
    std::istringstream f(line.substr(colon + 1));
    double v[9];
    bool ok = true;
    for (double& x : v) ok = ok && static_cast<bool>(f >> x);
    if (ok) out.push_back({name, {v[0], v[8]}});  // receive bytes, transmit bytes
  }
  return out;
}

std::vector<Sample> NetworkSampler::sample() {
  const Counters now = parse(read_file_or_empty(path_));
  const double t = steady_seconds();
  auto out = rates(now, last_, t - last_time_, "rx_bytes_per_s", "tx_bytes_per_s");
  last_ = now;
  last_time_ = t;
  return out;
}

RaplSampler::RaplSampler(std::string powercap) {
  std::error_code ec;
  static const std::regex package("intel-rapl:([0-9]+)");  // sub-domains (intel-rapl:0:1) are inside
  for (const auto& entry : fs::directory_iterator(powercap, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, package)) continue;
    const std::string energy = entry.path().string() + "/energy_uj";
    if (read_file_or_empty(energy).empty()) continue;  // unreadable (needs root on recent kernels)
    Domain d;
    d.device = "package" + m[1].str();
    d.energy_file = energy;
    d.range_uj = std::atof(read_file_or_empty(entry.path().string() + "/max_energy_range_uj").c_str());
    domains_.push_back(d);
  }
}

std::vector<Sample> RaplSampler::sample() {
  std::vector<Sample> out;
  const double t = steady_seconds();
  for (auto& d : domains_) {
    const double uj = std::atof(read_file_or_empty(d.energy_file).c_str());
    if (d.last_uj >= 0) {
      double delta = uj - d.last_uj;
      if (delta < 0) delta += d.range_uj;  // the counter wrapped
      d.total_j += delta / 1e6;
      if (t > last_time_) out.push_back({d.device, "power_w", delta / 1e6 / (t - last_time_)});
      out.push_back({d.device, "energy_j", d.total_j});
    }
    d.last_uj = uj;
  }
  last_time_ = t;
  return out;
}

IpmiSampler::IpmiSampler(std::vector<std::string> command) : command_(std::move(command)) {
  const auto text = command_output(command_, 10);
  available_ = text && parse(*text) >= 0;
}

double IpmiSampler::parse(const std::string& text) {
  static const std::regex reading(R"(Instantaneous power reading:\s*([0-9.]+)\s*Watts)");
  std::smatch m;
  if (!std::regex_search(text, m, reading)) return -1;
  return std::atof(m[1].str().c_str());
}

std::vector<Sample> IpmiSampler::sample() {
  if (!available_) return {};
  const auto text = command_output(command_, 5);
  if (!text) return {};
  const double watts = parse(*text);
  if (watts < 0) return {};
  return {{"system", "power_w", watts}};
}

std::optional<std::string> command_output(const std::vector<std::string>& argv, double limit_s) {
  char path[] = "/tmp/xpuperf-cmd-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return std::nullopt;
  ::close(fd);
  ProcessSpec spec;
  spec.argv = argv;
  spec.log_path = path;
  std::optional<std::string> out;
  try {
    if (run_process(spec, std::chrono::duration<double>(limit_s)).ok()) out = read_file_or_empty(path);
  } catch (const ProcessError&) {
  }
  fs::remove(path);
  return out;
}

}  // namespace xpuperf::monitor
