#pragma once
// The simulated device's memory: host memory, but apart from the CPU's. It is carved from one
// reserved address range whose pages stay inaccessible except while a sim kernel (a copy, a
// fallback's staging, a scalar read) holds a MemoryGuard on them. Host code that reads or writes
// a sim tensor as if it were on the CPU therefore faults at once, and the fault handler says so,
// as a real accelerator's memory would be unreadable from the host.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xpuperf::sim {

// The device's memory size: XPUPERF_SIM_MEMORY_GIB (default 16).
std::size_t memory_capacity();
// Bytes allocated now and at most, over all sim devices of this process.
std::size_t memory_in_use();
std::size_t memory_peak();

// A block of `bytes` (0 allowed: null), inaccessible until a guard opens it. Throws c10::Error
// ("out of memory") when the device's memory is full.
void* allocate_block(std::size_t bytes);
void free_block(void* block);
// Whether `address` is sim memory (async-signal-safe: for the fault handler).
bool is_sim_address(const void* address);

// Opens the blocks holding the given addresses for this thread's kernel and closes them when it
// goes; blocks allocated while it lives are opened too. Guards nest; one thread at a time.
class MemoryGuard {
 public:
  explicit MemoryGuard(std::vector<const void*> addresses = {});
  ~MemoryGuard();
  MemoryGuard(const MemoryGuard&) = delete;
  MemoryGuard& operator=(const MemoryGuard&) = delete;
  void open(const void* address);

 private:
  std::vector<void*> opened_;
  MemoryGuard* outer_ = nullptr;
};

// The device this thread computes on (the device guard's), for the published figures.
int current_device();

// Installs the handler that names a host access to sim memory before the process dies.
void install_fault_handler();

}  // namespace xpuperf::sim
