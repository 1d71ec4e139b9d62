#pragma once
// The device's kernels over a stretch of work, summed by name: where a training step's GPU time
// goes (the speed issue's table by kernel class), through LibTorch's own Kineto profiler (CUPTI),
// so no Nsight Systems is needed on the machine. Kernels that CUDA graphs replay are listed too.
// Torch-free header: the profiler's headers stay in kernel_profile.cpp.

#include <cstdint>
#include <string>
#include <vector>

namespace xpuperf::torchrt {

struct KernelTime {
  std::string name;  // as the device reports it (a mangled-looking template for ATen's kernels)
  double total_ms = 0;
  std::int64_t calls = 0;
};

// Starts profiling the device's activity (kernels, copies, fills) on construction; stop() ends it
// and returns the device events summed by name, longest first. One at a time in a process.
class KernelProfile {
 public:
  KernelProfile();  // throws std::runtime_error naming the cause when the profiler cannot start
  ~KernelProfile();
  KernelProfile(const KernelProfile&) = delete;
  KernelProfile& operator=(const KernelProfile&) = delete;

  // trace_path non-empty: also writes the whole record (every stream's kernels and copies, every
  // thread's CUDA runtime calls) there as a Chrome trace, for Perfetto or chrome://tracing; why it
  // could not goes to *trace_error (the sums are returned all the same).
  std::vector<KernelTime> stop(const std::string& trace_path = "", std::string* trace_error = nullptr);

 private:
  bool running_ = false;
};

}  // namespace xpuperf::torchrt
