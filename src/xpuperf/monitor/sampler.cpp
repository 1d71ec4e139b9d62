#include "xpuperf/monitor/sampler.h"

#include <chrono>
#include <cstdio>
#include <sstream>

#include "xpuperf/core/files.h"
#include "xpuperf/monitor/analysis.h"

namespace xpuperf::monitor {

std::vector<CpuSampler::Times> CpuSampler::parse(const std::string& text) {
  std::vector<Times> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cpu", 0) != 0) continue;
    std::istringstream fields(line);
    Times t;
    fields >> t.cpu;
    // user nice system idle iowait irq softirq steal (guest time is inside user already)
    double v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (double& x : v) fields >> x;
    t.total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    t.busy = t.total - v[3] - v[4];
    out.push_back(t);
  }
  return out;
}

std::vector<Sample> CpuSampler::sample() {
  const auto now = parse(read_file_or_empty(path_));
  std::vector<Sample> out;
  for (const auto& t : now) {
    for (const auto& before : last_) {
      if (before.cpu != t.cpu) continue;
      const double total = t.total - before.total;
      if (total > 0) out.push_back({t.cpu, "util_percent", 100.0 * (t.busy - before.busy) / total});
    }
  }
  last_ = now;
  return out;
}

std::vector<Sample> MemorySampler::parse(const std::string& text) {
  double total_kb = -1, available_kb = -1;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemTotal:", 0) == 0) total_kb = std::stod(line.substr(9));
    if (line.rfind("MemAvailable:", 0) == 0) available_kb = std::stod(line.substr(13));
  }
  if (total_kb < 0 || available_kb < 0) return {};
  return {{"host", "mem_used_bytes", (total_kb - available_kb) * 1024.0},
          {"host", "mem_total_bytes", total_kb * 1024.0}};
}

std::vector<Sample> MemorySampler::sample() {
  return parse(read_file_or_empty(path_));
}

Monitor::Monitor(std::string csv_path, std::string node, double period_s)
    : path_(std::move(csv_path)), node_(std::move(node)), period_s_(period_s) {}

Monitor::~Monitor() {
  stop();
}

void Monitor::add(std::unique_ptr<Sampler> sampler) {
  samplers_.push_back(std::move(sampler));
}

void Monitor::start() {
  csv_.open(path_, std::ios::app);
  csv_.precision(15);  // bytes and joules keep their digits
  if (csv_.tellp() == 0) csv_ << "time,node,device,metric,value\n";
  for (auto& s : samplers_) s->sample();  // sets the counters the first rates start from
  running_ = true;
  thread_ = std::thread([this] { loop(); });
}

void Monitor::stop() {
  if (!running_.exchange(false)) return;
  if (thread_.joinable()) thread_.join();
  write_samples();  // the state at the end
  csv_.close();
}

void Monitor::loop() {
  auto next = std::chrono::steady_clock::now();
  const auto period =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(period_s_));
  while (running_) {
    next += period;
    // Sleep in short steps so stop() returns quickly.
    while (running_ && std::chrono::steady_clock::now() < next)
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(next - std::chrono::steady_clock::now(),
                                                                                std::chrono::milliseconds(50)));
    if (running_) write_samples();
  }
}

void Monitor::write_samples() {
  const double t = unix_seconds();
  char time_text[32];
  std::snprintf(time_text, sizeof time_text, "%.3f", t);
  for (auto& s : samplers_)
    for (const auto& row : s->sample()) {
      if (!only_.empty() && !only_.count(row.device) && is_accelerator(row.device)) continue;
      csv_ << time_text << ',' << node_ << ',' << row.device << ',' << row.metric << ',' << row.value << '\n';
    }
  csv_.flush();
}

std::vector<std::unique_ptr<Sampler>> default_samplers() {
  std::vector<std::unique_ptr<Sampler>> samplers;
  samplers.push_back(std::make_unique<CpuSampler>());
  samplers.push_back(std::make_unique<MemorySampler>());
  samplers.push_back(std::make_unique<DiskSampler>());
  samplers.push_back(std::make_unique<NetworkSampler>());
  if (auto rapl = std::make_unique<RaplSampler>(); rapl->available()) samplers.push_back(std::move(rapl));
  if (auto ipmi = std::make_unique<IpmiSampler>(); ipmi->available()) samplers.push_back(std::move(ipmi));
  return samplers;
}

}  // namespace xpuperf::monitor
