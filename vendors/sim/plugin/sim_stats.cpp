#include "sim_stats.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <new>

namespace xpuperf::sim {
namespace {

std::string g_path;

void remove_stats() {
  if (!g_path.empty()) ::unlink(g_path.c_str());
}

DeviceStats* open_stats() {
  const std::string dir = stats_dir(::getuid());
  ::mkdir(dir.c_str(), 0700);
  g_path = dir + "/" + std::to_string(::getpid());
  const int fd = ::open(g_path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return nullptr;
  void* mem = nullptr;
  if (::ftruncate(fd, sizeof(DeviceStats)) == 0)
    mem = ::mmap(nullptr, sizeof(DeviceStats), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (!mem || mem == MAP_FAILED) {
    ::unlink(g_path.c_str());
    return nullptr;
  }
  auto* stats = new (mem) DeviceStats{kStatsMagic, {0}, {0}, {0}};
  std::atexit(remove_stats);
  return stats;
}

}  // namespace

DeviceStats* process_stats() {
  static DeviceStats* stats = open_stats();
  return stats;
}

}  // namespace xpuperf::sim
