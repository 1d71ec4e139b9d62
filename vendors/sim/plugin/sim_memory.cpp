#include "sim_memory.h"

#include <c10/util/Exception.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "sim_stats.h"

namespace xpuperf::sim {
namespace {

struct Arena {
  char* base = nullptr;
  std::size_t capacity = 0;
  std::size_t page = 4096;
  std::size_t top = 0;                            // bytes carved so far
  std::map<char*, std::size_t> blocks;            // block → its size in bytes (whole pages)
  std::multimap<std::size_t, char*> free_blocks;  // size → block, reused before carving more
  std::map<char*, int> open_count;                // blocks a guard holds open
  std::recursive_mutex mutex;
  std::size_t in_use = 0, peak = 0;
};

std::atomic<char*> g_base{nullptr};
std::atomic<std::size_t> g_capacity{0};

Arena& arena() {
  static Arena* a = [] {
    auto* arena = new Arena;  // never destroyed: blocks may be freed during static destruction
    arena->page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::size_t gib = 16;
    if (const char* text = std::getenv("XPUPERF_SIM_MEMORY_GIB"); text && *text) gib = std::strtoull(text, nullptr, 10);
    arena->capacity = std::max<std::size_t>(1, gib) << 30;
    void* range = ::mmap(nullptr, arena->capacity, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    TORCH_CHECK(range != MAP_FAILED, "sim: cannot reserve ", gib,
                " GiB of address space for the device's memory: ", std::strerror(errno),
                " (set XPUPERF_SIM_MEMORY_GIB lower)");
    arena->base = static_cast<char*>(range);
    g_base = arena->base;
    g_capacity = arena->capacity;
    return arena;
  }();
  return *a;
}

thread_local MemoryGuard* t_guard = nullptr;

// The figures the sim's monitor library reads (sim_stats.h).
void publish(const Arena& a) {
  if (DeviceStats* stats = process_stats()) {
    stats->bytes_in_use = a.in_use;
    stats->peak_bytes = a.peak;
    stats->device = current_device();
  }
}

void set_access(char* block, std::size_t bytes, bool open) {
  TORCH_CHECK(::mprotect(block, bytes, open ? PROT_READ | PROT_WRITE : PROT_NONE) == 0,
              "sim: mprotect failed: ", std::strerror(errno));
}

// The block holding `address`, or null. Under the arena's lock.
char* block_of(Arena& a, const void* address) {
  auto* p = static_cast<char*>(const_cast<void*>(address));
  auto it = a.blocks.upper_bound(p);
  if (it == a.blocks.begin()) return nullptr;
  --it;
  return p < it->first + it->second ? it->first : nullptr;
}

}  // namespace

std::size_t memory_capacity() {
  return arena().capacity;
}

std::size_t memory_in_use() {
  Arena& a = arena();
  std::lock_guard<std::recursive_mutex> lock(a.mutex);
  return a.in_use;
}

std::size_t memory_peak() {
  Arena& a = arena();
  std::lock_guard<std::recursive_mutex> lock(a.mutex);
  return a.peak;
}

void* allocate_block(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  Arena& a = arena();
  std::lock_guard<std::recursive_mutex> lock(a.mutex);
  const std::size_t size = (bytes + a.page - 1) / a.page * a.page;
  char* block = nullptr;
  if (auto it = a.free_blocks.find(size); it != a.free_blocks.end()) {
    block = it->second;
    a.free_blocks.erase(it);
  } else {
    TORCH_CHECK(a.top + size <= a.capacity, "sim: out of device memory: ", bytes, " bytes asked for, ", a.in_use,
                " of ", a.capacity, " in use (XPUPERF_SIM_MEMORY_GIB sets the size)");
    block = a.base + a.top;
    a.top += size;
  }
  a.blocks[block] = size;
  a.in_use += size;
  a.peak = std::max(a.peak, a.in_use);
  publish(a);
  if (t_guard) t_guard->open(block);
  return block;
}

void free_block(void* block) {
  if (!block) return;
  Arena& a = arena();
  std::lock_guard<std::recursive_mutex> lock(a.mutex);
  auto* p = static_cast<char*>(block);
  const auto it = a.blocks.find(p);
  if (it == a.blocks.end()) return;
  const std::size_t size = it->second;
  // A block freed while a guard holds it open (a temporary of the kernel) closes now.
  if (a.open_count.erase(p)) set_access(p, size, false);
  ::madvise(p, size, MADV_DONTNEED);  // its pages go back to the host; it reads as zeros when reused
  a.blocks.erase(it);
  a.free_blocks.emplace(size, p);
  a.in_use -= size;
  publish(a);
}

bool is_sim_address(const void* address) {
  const char* base = g_base.load(std::memory_order_relaxed);
  const auto* p = static_cast<const char*>(address);
  return base && p >= base && p < base + g_capacity.load(std::memory_order_relaxed);
}

MemoryGuard::MemoryGuard(std::vector<const void*> addresses) : outer_(t_guard) {
  arena().mutex.lock();  // held for the guard's life: one kernel touches sim memory at a time
  t_guard = this;
  for (const void* address : addresses) open(address);
}

void MemoryGuard::open(const void* address) {
  if (!address) return;
  Arena& a = arena();
  char* block = block_of(a, address);
  if (!block) return;
  if (a.open_count[block]++ == 0) set_access(block, a.blocks[block], true);
  opened_.push_back(block);
}

MemoryGuard::~MemoryGuard() {
  Arena& a = arena();
  for (void* opened : opened_) {
    char* block = static_cast<char*>(opened);
    const auto it = a.open_count.find(block);
    if (it == a.open_count.end()) continue;  // freed meanwhile
    if (--it->second == 0) {
      a.open_count.erase(it);
      const auto size = a.blocks.find(block);
      if (size != a.blocks.end()) set_access(block, size->second, false);
    }
  }
  t_guard = outer_;
  a.mutex.unlock();
}

namespace {

struct sigaction g_previous;

void on_fault(int sig, siginfo_t* info, void* context) {
  if (info && is_sim_address(info->si_addr)) {
    static const char message[] =
        "\nxpuperf sim: host code read or wrote the simulated device's memory directly: a tensor on the sim "
        "device was used as if it were on the CPU (a data_ptr() read without a copy to the host, or a CPU "
        "kernel given a device tensor). Copy it to the CPU first (.cpu()), or register a kernel for the "
        "device.\n";
    [[maybe_unused]] auto n = ::write(2, message, sizeof message - 1);
  }
  // Hand the fault on: the previous handler (a crash reporter), else the default (a core dump).
  if (g_previous.sa_flags & SA_SIGINFO && g_previous.sa_sigaction) {
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN && g_previous.sa_handler) {
    g_previous.sa_handler(sig);
    return;
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install_fault_handler() {
  arena();  // the range exists before any fault can name it
  struct sigaction action {};
  action.sa_sigaction = on_fault;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGSEGV, &action, &g_previous);
}

}  // namespace xpuperf::sim
