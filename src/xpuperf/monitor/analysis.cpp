#include "xpuperf/monitor/analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace xpuperf::monitor {

namespace {

// What a device's energy counts as, in the order a round is charged: accelerators, else CPU
// packages, else the whole system.
enum Charge { kAccelerator = 0, kCpuPackage = 1, kSystem = 2, kNotCharged = 3 };

Charge charge_of(const std::string& device) {
  if (device.rfind("gpu", 0) == 0) return kAccelerator;
  if (device.rfind("package", 0) == 0) return kCpuPackage;
  if (device == "system") return kSystem;
  return kNotCharged;
}

}  // namespace

void for_each_monitor_row(const std::string& path, const std::function<void(const MonitorRow&)>& row) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  MonitorRow r;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string t, value;
    if (!std::getline(f, t, ',') || !std::getline(f, r.node, ',') || !std::getline(f, r.device, ',') ||
        !std::getline(f, r.metric, ',') || !std::getline(f, value))
      continue;  // a row cut off by a crash
    char* end = nullptr;
    r.value = std::strtod(value.c_str(), &end);
    if (end == value.c_str()) continue;
    r.time = std::atof(t.c_str());
    row(r);
  }
}

double integrate(const std::vector<std::pair<double, double>>& series) {
  double total = 0;
  for (std::size_t i = 1; i < series.size(); ++i)
    total += (series[i].first - series[i - 1].first) * (series[i].second + series[i - 1].second) / 2.0;
  return total;
}

double MonitorAnalysis::round_energy_j() const {
  if (accelerator_energy_j > 0) return accelerator_energy_j;
  if (cpu_energy_j > 0) return cpu_energy_j;
  return system_energy_j;
}

nlohmann::json MonitorAnalysis::to_json() const {
  nlohmann::json out = {{"seconds", seconds},
                        {"energy_j", energy_j},
                        {"accelerator_energy_j", accelerator_energy_j},
                        {"cpu_energy_j", cpu_energy_j},
                        {"system_energy_j", system_energy_j},
                        {"round_energy_j", round_energy_j()},
                        {"peak_host_mem_bytes", peak_host_mem_bytes},
                        {"peak_device_mem_bytes", peak_device_mem_bytes},
                        {"total_device_mem_bytes", total_device_mem_bytes},
                        {"accelerators_left_out", accelerators_left_out},
                        {"series", nlohmann::json::array()}};
  for (const auto& s : series) {
    // Per-core CPU series are many and say little on their own: the file has them.
    if (s.device.rfind("cpu", 0) == 0 && s.device != "cpu") continue;
    out["series"].push_back({{"node", s.node},
                             {"device", s.device},
                             {"metric", s.metric},
                             {"count", s.count},
                             {"mean", s.mean},
                             {"min", s.min},
                             {"max", s.max},
                             {"std", s.std}});
  }
  return out;
}

double mean_power_in_window(const std::vector<std::string>& paths, double t0, double t1,
                            const std::set<std::string>& accelerators_used) {
  // (node, device) → power samples, by Charge.
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<double, double>>> series[kNotCharged];
  for (const auto& path : paths)
    for_each_monitor_row(path, [&](const MonitorRow& r) {
      const Charge charge = charge_of(r.device);
      if (r.metric != "power_w" || charge == kNotCharged) return;
      if (charge == kAccelerator && !accelerators_used.empty() && !accelerators_used.count(r.device)) return;
      series[charge][{r.node, r.device}].push_back({r.time, r.value});
    });
  for (const auto& kind : series) {
    double total = 0;
    bool any = false;
    for (const auto& [id, points] : kind) {
      for (const double margin : {0.0, 1.0}) {
        double sum = 0;
        int n = 0;
        for (const auto& [t, w] : points)
          if (t >= t0 - margin && t <= t1 + margin) sum += w, ++n;
        if (n > 0) {
          total += sum / n;
          any = true;
          break;
        }
      }
    }
    if (any) return total;
  }
  return 0;
}

bool is_accelerator(const std::string& device) {
  return charge_of(device) == kAccelerator;
}

std::set<std::string> accelerators_of_round(int nproc) {
  std::set<std::string> out;
  for (int i = 0; i < nproc; ++i) out.insert("gpu" + std::to_string(i));
  return out;
}

MonitorAnalysis analyse_monitor_csv(const std::vector<std::string>& paths,
                                    const std::set<std::string>& accelerators_used) {
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<std::pair<double, double>>> data;
  for (const auto& path : paths)
    for_each_monitor_row(path, [&](const MonitorRow& r) {
      data[{r.node, r.device, r.metric}].push_back({r.time, r.value});
    });
  MonitorAnalysis a;
  const auto left_out = [&](const std::string& device) {
    if (charge_of(device) != kAccelerator || accelerators_used.empty() || accelerators_used.count(device)) return false;
    a.accelerators_left_out.insert(device);
    return true;
  };
  double t_min = 0, t_max = 0;
  std::map<std::string, double> host_peak;  // per node
  for (auto& [key, points] : data) {
    const auto& [node, device, metric] = key;
    std::sort(points.begin(), points.end());
    SeriesStats s{node, device, metric};
    s.count = points.size();
    s.min = s.max = points[0].second;
    double sum = 0, sum_sq = 0;
    for (const auto& [t, v] : points) {
      sum += v;
      sum_sq += v * v;
      s.min = std::min(s.min, v);
      s.max = std::max(s.max, v);
    }
    s.mean = sum / static_cast<double>(s.count);
    s.std = std::sqrt(std::max(0.0, sum_sq / static_cast<double>(s.count) - s.mean * s.mean));
    s.first_time = points.front().first;
    s.last_time = points.back().first;
    s.last_value = points.back().second;
    t_min = t_min == 0 ? s.first_time : std::min(t_min, s.first_time);
    t_max = std::max(t_max, s.last_time);
    a.series.push_back(s);

    if (device == "host" && metric == "mem_used_bytes") host_peak[node] = std::max(host_peak[node], s.max);
    if (metric == "mem_used_bytes" && device != "host" && !left_out(device) && s.max > a.peak_device_mem_bytes) {
      a.peak_device_mem_bytes = s.max;
      const auto total = data.find({node, device, "mem_total_bytes"});
      if (total != data.end()) a.total_device_mem_bytes = total->second.back().second;
    }
  }
  // Energy: a device's own counter when it has one, else its power integrated over time.
  for (const auto& s : a.series) {
    if (s.metric != "energy_j" && s.metric != "power_w") continue;
    const std::string id = s.node + "/" + s.device;
    const bool has_counter = data.count({s.node, s.device, "energy_j"}) > 0;
    if (s.metric == "power_w" && has_counter) continue;
    const double joules = s.metric == "energy_j" ? s.last_value : integrate(data[{s.node, s.device, s.metric}]);
    a.energy_j[id] = joules;
    switch (charge_of(s.device)) {
      case kAccelerator:
        if (!left_out(s.device)) a.accelerator_energy_j += joules;
        break;
      case kCpuPackage:
        a.cpu_energy_j += joules;
        break;
      case kSystem:
        a.system_energy_j += joules;
        break;
      case kNotCharged:
        break;
    }
  }
  for (const auto& [node, peak] : host_peak) a.peak_host_mem_bytes = std::max(a.peak_host_mem_bytes, peak);
  a.seconds = t_max - t_min;
  return a;
}

}  // namespace xpuperf::monitor
