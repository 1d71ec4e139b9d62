#include "xpuperf/core/host_memory.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace xpuperf {
namespace {

#if defined(__GLIBC__)
void* volatile escape = nullptr;  // the compiler may not drop an allocation that escapes

// Bytes served by mmap after a block of `bytes` is taken and written.
std::size_t mapped_while_holding(std::size_t bytes) {
  void* p = std::malloc(bytes);
  if (!p) return 0;
  std::memset(p, 1, bytes);
  escape = p;
  const std::size_t mapped = mallinfo2().hblkhd;
  std::free(p);
  escape = nullptr;
  return mapped;
}
#endif

TEST(HostMemory, ALargeFreedBlockStaysInTheProcessForTheNextStep) {
#if defined(__GLIBC__)
  if (std::getenv("MALLOC_MMAP_MAX_") || std::getenv("MALLOC_TRIM_THRESHOLD_"))
    GTEST_SKIP() << "MALLOC_MMAP_MAX_ or MALLOC_TRIM_THRESHOLD_ is set: the user's choice wins";
  const std::size_t bytes = std::size_t{64} << 20;
  // glibc's default: a block this large is mapped on its own and unmapped on free.
  EXPECT_GE(mapped_while_holding(bytes), bytes);
  ASSERT_TRUE(keep_freed_host_memory());
  EXPECT_EQ(mapped_while_holding(bytes), 0u) << "served from the heap";
  EXPECT_GE(mallinfo2().fordblks, bytes) << "and kept there once freed";
#else
  GTEST_SKIP() << "not glibc";
#endif
}

}  // namespace
}  // namespace xpuperf
