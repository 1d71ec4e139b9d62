#include "xpuperf/core/host_memory.h"

#include <climits>
#include <cstdlib>
#include <fstream>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace xpuperf {

std::int64_t host_memory_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::int64_t kib = 0;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

bool keep_freed_host_memory() {
#if defined(__GLIBC__)
  bool changed = false;
  // Every block from the heap, none from mmap.
  if (!std::getenv("MALLOC_MMAP_MAX_")) changed = mallopt(M_MMAP_MAX, 0) == 1 || changed;
  // The heap's free top is given back only above 2 GiB.
  if (!std::getenv("MALLOC_TRIM_THRESHOLD_")) changed = mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1 || changed;
  return changed;
#else
  return false;
#endif
}

}  // namespace xpuperf
