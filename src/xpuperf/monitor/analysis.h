#pragma once
// What a round's monitor.csv files say: statistics of every series, energy per device, peak
// memory. docs/METRICS.md defines each figure.

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace xpuperf::monitor {

struct SeriesStats {
  std::string node, device, metric;
  std::size_t count = 0;
  double mean = 0, min = 0, max = 0, std = 0;
  double first_time = 0, last_time = 0, last_value = 0;
};

struct MonitorAnalysis {
  std::vector<SeriesStats> series;
  std::map<std::string, double> energy_j;       // "node/device" → joules over the monitored time
  double accelerator_energy_j = 0;              // sum over gpu<i> devices
  double cpu_energy_j = 0;                      // sum over package<i> devices (RAPL)
  double system_energy_j = 0;                   // IPMI's whole-system power, integrated
  double peak_host_mem_bytes = 0;               // the largest node's peak
  double peak_device_mem_bytes = 0;             // the largest device's peak
  double total_device_mem_bytes = 0;            // that device's size
  double seconds = 0;                           // monitored time
  std::set<std::string> accelerators_left_out;  // present but not used by the round

  nlohmann::json to_json() const;
  // The energy a round is charged with: accelerators when there are any, else CPU packages,
  // else the whole system; 0 when nothing measured power.
  double round_energy_j() const;
};

// One row of monitor.csv (time,node,device,metric,value).
struct MonitorRow {
  double time = 0;
  std::string node, device, metric;
  double value = 0;
};

// Calls `row` for every readable row of a monitor.csv (header skipped); rows cut off by a
// crash, or whose value is not a number, are skipped.
void for_each_monitor_row(const std::string& path, const std::function<void(const MonitorRow&)>& row);

// Trapezoid integral of (time, value) pairs sorted by time.
double integrate(const std::vector<std::pair<double, double>>& series);

// Reads one or more monitor.csv files (time,node,device,metric,value); unreadable rows are skipped.
// `accelerators_used` (e.g. gpu0, gpu1) limits the accelerator energy and peak device memory to
// the devices a round ran on, so a 1-GPU round on an 8-GPU host is not charged for 7 idle ones;
// empty: every accelerator counts.
MonitorAnalysis analyse_monitor_csv(const std::vector<std::string>& paths,
                                    const std::set<std::string>& accelerators_used = {});

// The mean power (W) drawn in [t0, t1] (Unix seconds) by what a round is charged for: the
// accelerators it used, else the CPU packages, else the whole system; summed over devices, each
// the mean of its power_w samples in the window (widened by a second each side when the window
// holds none, for windows shorter than the monitor period). 0 when nothing measured power.
double mean_power_in_window(const std::vector<std::string>& paths, double t0, double t1,
                            const std::set<std::string>& accelerators_used = {});

// Whether a monitor device is an accelerator (gpu<k>), what a round is charged for first.
bool is_accelerator(const std::string& device);

// The accelerators a round of `nproc` ranks per node uses: gpu0 … gpu<nproc-1> (the node agent
// gives local rank i device i, in PCI bus order like NVML's).
std::set<std::string> accelerators_of_round(int nproc);

}  // namespace xpuperf::monitor
