// `xpuperf monitor`: the monitors alone, for a while, then a summary.

#include <signal.h>

#include <atomic>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <thread>

#include "xpuperf/cli/commands.h"
#include "xpuperf/core/plan.h"
#include "xpuperf/monitor/analysis.h"
#include "xpuperf/monitor/sampler.h"

namespace xpuperf::cli {

namespace {

std::atomic<int> g_stop{0};
void on_stop(int sig) {
  g_stop = sig;
}

int run_monitor(const std::string& duration_text, const std::string& out, double period) {
  const auto duration = parse_duration(duration_text);
  if (!duration) throw CommandError("--duration must be like 30, 30s, 5m or 1h, got '" + duration_text + "'");
  if (period < 0.1) throw CommandError("--period must be at least 0.1 s");
  monitor::Monitor m(out, "localhost", period);
  std::vector<std::string> names;
  auto samplers = monitor::default_samplers();
  // The GPUs through NVIDIA's monitor library (NVML), as for a vendor folder without vendor.yaml.
  std::string error;
  if (auto gpus = monitor::vendor_library_sampler(nullptr, error)) samplers.push_back(std::move(gpus));
  if (!error.empty()) std::cerr << "xpuperf monitor: " << error << "\n";
  for (auto& sampler : samplers) {
    names.push_back(sampler->name());
    m.add(std::move(sampler));
  }
  std::cout << "Monitoring " << join_or_none(names) << " every " << period << " s for " << *duration << " s into "
            << out << " (Ctrl-C stops early)\n";
  struct sigaction action {};
  action.sa_handler = on_stop;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  m.start();
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(*duration);
  while (g_stop == 0 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  m.stop();

  const auto a = monitor::analyse_monitor_csv({out});
  std::cout
      << "\n| device | metric | samples | mean | min | max | std |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& s : a.series) {
    if (s.device.rfind("cpu", 0) == 0 && s.device != "cpu") continue;  // per core: see the file
    std::cout << std::setprecision(6) << "| " << s.device << " | " << s.metric << " | " << s.count << " | " << s.mean
              << " | " << s.min << " | " << s.max << " | " << s.std << " |\n";
  }
  std::cout << "\nmonitored " << a.seconds << " s; peak host memory " << a.peak_host_mem_bytes / (1 << 30) << " GiB";
  if (a.peak_device_mem_bytes > 0)
    std::cout << ", peak device memory " << a.peak_device_mem_bytes / (1 << 30) << " GiB";
  if (a.round_energy_j() > 0) std::cout << ", energy " << a.round_energy_j() << " J";
  std::cout << "\n";
  return 0;
}

}  // namespace

void add_monitor_command(CLI::App& app, const GlobalOptions&, int& exit_code) {
  auto* cmd = app.add_subcommand("monitor", "Run the monitors alone for a while and print a summary");
  auto duration = std::make_shared<std::string>("30s");
  auto out = std::make_shared<std::string>("monitor.csv");
  auto period = std::make_shared<double>(1.0);
  cmd->add_option("--duration", *duration, "How long: 30, 30s, 5m, 1h")->capture_default_str();
  cmd->add_option("--out", *out, "CSV file (time,node,device,metric,value), appended to")->capture_default_str();
  cmd->add_option("--period", *period, "Seconds between samples (0.1 at least)")->capture_default_str();
  cmd->callback([&exit_code, duration, out, period] { exit_code = run_monitor(*duration, *out, *period); });
}

}  // namespace xpuperf::cli
