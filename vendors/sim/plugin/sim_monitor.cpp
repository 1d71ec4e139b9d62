// The sim vendor's monitor library (vendor.yaml: monitor: library): what the node agent samples
// for the simulated devices, from /dev/shm and /proc as a real vendor's would read its driver.
// For each live process with a sim device: its device memory in use (mem_used_bytes) and the host
// CPU time it spent, the sim's compute, as util_percent of the host's cores over the period.
// Without LibTorch: the node agent is torch-free.

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "sim_stats.h"
#include "xpuperf/monitor/sampler_plugin.h"

namespace {

using xpuperf::sim::DeviceStats;

// utime + stime of a process in seconds, from /proc/<pid>/stat; negative when it is gone.
double cpu_seconds(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(text.substr(close + 2));
  std::string skip;
  for (int i = 0; i < 11; ++i) fields >> skip;  // state .. cmajflt: fields 3 to 13
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

struct Last {
  double cpu = -1, wall = 0;
};

std::size_t sample(char* text, std::size_t capacity) {
  static std::map<long, Last> last;
  static const long cores = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  const std::string dir = xpuperf::sim::stats_dir(::getuid());
  const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  std::string out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (end == e->d_name || *end) continue;
      const std::string path = dir + "/" + e->d_name;
      if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {  // ended without cleaning up
        ::unlink(path.c_str());
        last.erase(pid);
        continue;
      }
      const int fd = ::open(path.c_str(), O_RDONLY);
      if (fd < 0) continue;
      void* mem = ::mmap(nullptr, sizeof(DeviceStats), PROT_READ, MAP_SHARED, fd, 0);
      ::close(fd);
      if (mem == MAP_FAILED) continue;
      const auto* stats = static_cast<const DeviceStats*>(mem);
      if (stats->magic == xpuperf::sim::kStatsMagic) {
        const std::string device = "sim" + std::to_string(stats->device.load());
        out += device + ",mem_used_bytes," + std::to_string(stats->bytes_in_use.load()) + "\n";
        const double cpu = cpu_seconds(pid);
        Last& l = last[pid];
        if (cpu >= 0 && l.cpu >= 0 && now > l.wall)
          out += device + ",util_percent," +
                 std::to_string(100.0 * (cpu - l.cpu) / (now - l.wall) / static_cast<double>(cores)) + "\n";
        l = {cpu, now};
      }
      ::munmap(mem, sizeof(DeviceStats));
    }
    ::closedir(d);
  }
  const std::size_t n = std::min(out.size(), capacity);
  std::memcpy(text, out.data(), n);
  return n;
}

}  // namespace

XPUPERF_MONITOR_SAMPLER("sim", sample)
