#pragma once
// One block of host memory for many tensors that a device copies to and from (ZeRO-Offload's
// optimizer state): mapped at its exact size and, where asked, page-locked in place by the device's
// vendor (torchrt::register_host_pinning).
// PyTorch's pinned allocator rounds every allocation up to a power of two (a Llama-3-8B MLP weight's
// 235 MB of fp32 takes 268 MB; its whole offloaded state 11.6 GB more than it needs) and pins page by
// page on one thread; here the pages are faulted in by several threads first, and the kernel's fresh
// pages are zero, so no tensor taken from the arena needs a fill.

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>

namespace xpuperf::torchrt {

class HostArena {
 public:
  // Room for `bytes` (tensors start at 64-byte boundaries: count each one's size rounded up to 64).
  // `pinned_for`: page-locked for that device type's copies; where its vendor registered no pinning
  // or the pinning fails, each tensor comes from PyTorch's pinned allocator instead (and
  // pinned_exactly() says so). `threads`: how many threads fault the pages in. std::runtime_error,
  // naming both, where the block is larger than the host's available memory.
  HostArena(std::int64_t bytes, std::optional<c10::DeviceType> pinned_for, int threads);
  // One owner hands out each byte once.
  HostArena(const HostArena&) = delete;
  HostArena& operator=(const HostArena&) = delete;
  HostArena(HostArena&&) = default;
  HostArena& operator=(HostArena&&) = default;

  // The next `numel` elements of `type`, all zero. std::length_error when the arena is full.
  torch::Tensor take(std::int64_t numel, torch::ScalarType type);

  // Whether the block is page-locked at its exact size (else: pinned through PyTorch, or not pinned).
  bool pinned_exactly() const;
  static std::int64_t rounded(std::int64_t bytes) { return (bytes + 63) / 64 * 64; }

 private:
  struct Block;
  std::shared_ptr<Block> block_;  // null where the tensors come from PyTorch's pinned allocator
  std::int64_t size_ = 0, used_ = 0;
  bool pinned_ = false;
};

}  // namespace xpuperf::torchrt
