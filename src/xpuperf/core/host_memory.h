#pragma once
// How a rank that computes on the CPU takes host memory.

namespace xpuperf {

// Keeps freed blocks in the process for the next step instead of handing them back to the
// system. glibc serves a block above 32 MiB with mmap and unmaps it on free, so a CPU training step
// whose tensors are that large (a GPT's logits over a 50,257-token vocabulary) faults every page in
// again on every step: a tiny GPT-2 trained 4.6 times slower so. The memory a rank holds stays at
// its high-water mark, which is what its peak is measured as anyway. A user's MALLOC_MMAP_MAX_ or
// MALLOC_TRIM_THRESHOLD_ in the environment wins. Returns whether anything was changed (false where
// the C library is not glibc).
bool keep_freed_host_memory();

}  // namespace xpuperf
