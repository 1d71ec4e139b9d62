#pragma once
// How a rank that computes on the CPU takes host memory, and how much there is.

#include <cstdint>

namespace xpuperf {

// The kernel's estimate of the memory that can be taken without swapping (/proc/meminfo's
// MemAvailable), in bytes; 0 where it cannot be read.
std::int64_t host_memory_available_bytes();

// Keeps freed blocks in the process for the next step instead of handing them back to the
// system. glibc serves a block above 32 MiB with mmap and unmaps it on free, so a CPU training step
// whose tensors are that large (a GPT's logits over a 50,257-token vocabulary) faults every page in
// again on every step: a tiny GPT-2 trained 4.6 times slower so. The memory a rank holds stays at
// its high-water mark, which is what its peak is measured as anyway. A user's MALLOC_MMAP_MAX_ or
// MALLOC_TRIM_THRESHOLD_ in the environment wins. Returns whether anything was changed (false where
// the C library is not glibc).
bool keep_freed_host_memory();

}  // namespace xpuperf
