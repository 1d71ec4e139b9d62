#include "xpuperf/torchrt/host_arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>

#include "xpuperf/core/host_memory.h"
#include "xpuperf/core/parallel.h"
#include "xpuperf/torchrt/device.h"

namespace xpuperf::torchrt {

namespace {

std::string gib(std::int64_t bytes) {
  const auto tenths = bytes * 10 / (std::int64_t{1} << 30);
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " GiB";
}

}  // namespace

struct HostArena::Block {
  void* data = nullptr;
  std::size_t size = 0;
  std::function<void(void*)> unpin;  // set once the block is page-locked
  ~Block() {
    if (unpin) unpin(data);
    if (data) ::munmap(data, size);
  }
};

HostArena::HostArena(std::int64_t bytes, std::optional<c10::DeviceType> pinned_for, int threads)
    : size_(bytes), pinned_(pinned_for.has_value()) {
  if (bytes <= 0) return;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const auto length = (static_cast<std::size_t>(bytes) + page - 1) / page * page;
  const HostPinning* pinning = pinned_for ? host_pinning(*pinned_for) : nullptr;
  if (pinned_ && !pinning) return;  // PyTorch's pinned allocator, tensor by tensor
  // The mapping itself would succeed (the kernel overcommits), and faulting in pages that are not
  // there would bring the OOM killer, not an error.
  const std::int64_t available = host_memory_available_bytes();
  if (available > 0 && static_cast<std::int64_t>(length) > available)
    throw std::runtime_error("host memory: " + gib(static_cast<std::int64_t>(length)) + " asked for, " +
                             gib(available) + " available (MemAvailable)");
  void* data = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED) throw std::runtime_error("host memory: " + gib(bytes) + " could not be mapped");
  auto block = std::make_shared<Block>();
  block->data = data;
  block->size = length;
  ::madvise(data, length, MADV_HUGEPAGE);  // fewer pages to fault in and to lock, where the kernel allows
  // Each page faulted in (the kernel hands it over zeroed) by one of several threads: locking pages
  // that are not there yet faults them in one by one on the calling thread.
  constexpr std::size_t kChunk = std::size_t{64} << 20;
  parallel_items((length + kChunk - 1) / kChunk, threads, [&](std::size_t i, int) {
    auto* bytes_of = static_cast<volatile char*>(data);
    const std::size_t end = std::min(length, (i + 1) * kChunk);
    for (std::size_t at = i * kChunk; at < end; at += page) bytes_of[at] = 0;
  });
  if (pinning) {
    if (!pinning->pin(data, length)) return;  // PyTorch's pinned allocator
    block->unpin = pinning->unpin;
  }
  block_ = std::move(block);
}

bool HostArena::pinned_exactly() const {
  return block_ && block_->unpin;
}

torch::Tensor HostArena::take(std::int64_t numel, torch::ScalarType type) {
  const auto options = torch::TensorOptions().dtype(type);
  const std::int64_t bytes = numel * static_cast<std::int64_t>(c10::elementSize(type));
  const std::int64_t at = used_, taken = rounded(bytes);
  if (at + taken > size_)
    throw std::length_error("host arena: " + std::to_string(bytes) + " bytes asked for, " + std::to_string(size_ - at) +
                            " left of " + std::to_string(size_));
  used_ = at + taken;
  if (!block_) return torch::zeros({numel}, options.pinned_memory(pinned_));
  auto* start = static_cast<char*>(block_->data) + at;
  auto keep = block_;  // the block lives while any tensor taken from it does
  return torch::from_blob(
      start, {numel}, [keep](void*) {}, options);
}

}  // namespace xpuperf::torchrt
