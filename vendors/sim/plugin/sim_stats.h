#pragma once
// What a process's sim device publishes for the sim monitor library (sim_monitor.cpp), the way a
// real device's driver exposes its state: one small shared file a process,
// /dev/shm/xpuperf-sim-<uid>/<pid>, mapped by both sides.

#include <atomic>
#include <cstdint>
#include <string>

namespace xpuperf::sim {

inline constexpr std::uint64_t kStatsMagic = 0x78707573696d3031ull;  // "xpusim01"

struct DeviceStats {
  std::uint64_t magic;
  std::atomic<std::int64_t> device;  // the device this process used last
  std::atomic<std::uint64_t> bytes_in_use;
  std::atomic<std::uint64_t> peak_bytes;
};

// The folder of the stats files of this user's processes.
inline std::string stats_dir(unsigned uid) {
  return "/dev/shm/xpuperf-sim-" + std::to_string(uid);
}

// This process's stats (created on first use; null when /dev/shm cannot be written: the device
// still works, unmonitored).
DeviceStats* process_stats();

}  // namespace xpuperf::sim
