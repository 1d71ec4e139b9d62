// What NVIDIA's plug-in registers besides its operators' kernels: the collective backend `nccl`
// (LibTorch's ProcessGroupNCCL), the peak memory of CUDA's caching allocator for the results, the
// current stream's handle for libraries that launch on it, and the features the layers ask about
// (torchrt::device_has_feature).

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/version.h>
#ifdef XPUPERF_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <exception>
#include <memory>

#include "xpuperf/torchrt/collective_group.h"
#include "xpuperf/torchrt/compat.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/vendor_registry.h"

namespace xpuperf::nvidia {
namespace {

#ifdef XPUPERF_HAVE_NCCL
// NCCL's group, shut down when it goes: LibTorch 2.x warns (and may leak) when one is destroyed
// without shutdown().
class NcclCollectives : public torchrt::ProcessGroupCollectives<c10d::ProcessGroupNCCL> {
 public:
  using ProcessGroupCollectives::ProcessGroupCollectives;
  ~NcclCollectives() override {
    if constexpr (compat::kTorch2) shutdown(*group());
  }

 private:
  // A template, so that 1.13's ProcessGroupNCCL, which has no shutdown(), is never asked for one.
  template <typename Group>
  static void shutdown(Group& group) {
    try {
      group.shutdown();
    } catch (const std::exception&) {
    }
  }
};

std::shared_ptr<torchrt::CollectiveGroup> make_nccl_group(const torchrt::CollectiveContext& context) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = context.timeout;
  return std::make_shared<NcclCollectives>(
      c10::make_intrusive<c10d::ProcessGroupNCCL>(context.store, context.rank, context.size, options));
}
#endif

double cuda_peak_memory_bytes(const torch::Device& device) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  return static_cast<double>(stats.allocated_bytes[0].peak);  // [0]: all pools together
}

// The driver's free memory and what the caching allocator holds but no tensor uses.
double cuda_free_memory_bytes(const torch::Device& device) {
  const c10::cuda::CUDAGuard guard(device);
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return -1;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  return static_cast<double>(free) +
         static_cast<double>(stats.reserved_bytes[0].current - stats.allocated_bytes[0].current);
}

// ATen's grouped GEMM has CUTLASS kernels for bf16 on Hopper and Blackwell (compute capability 9
// and 10); elsewhere it loops over the groups, reading their offsets back to the host.
bool grouped_mm_bf16(const torch::Device& device) {
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device.index()) != cudaSuccess) return false;
  return major == 9 || major == 10;
}

// Host memory page-locked in place for every CUDA context (the optimizer offload's arena).
torchrt::HostPinning cuda_host_pinning() {
  torchrt::HostPinning pinning;
  pinning.pin = [](void* data, std::size_t bytes) {
    return cudaHostRegister(data, bytes, cudaHostRegisterPortable) == cudaSuccess;
  };
  pinning.unpin = [](void* data) { cudaHostUnregister(data); };
  return pinning;
}

// Registered as the binary loads: NVIDIA's plug-in is linked in (vendor.yaml: plugin: builtin).
const bool registered = [] {
#ifdef XPUPERF_HAVE_NCCL
  torchrt::register_collective_backend("nccl", &make_nccl_group);
#endif
  // Its GPUs, "cuda" in configs; a wait covers every stream (the offload's copies, the decoder's).
  torchrt::register_builtin_device(
      {"cuda", c10::DeviceType::CUDA, [](const torch::Device& device) { torch::cuda::synchronize(device.index()); }});
  torchrt::register_peak_memory_probe(c10::DeviceType::CUDA, &cuda_peak_memory_bytes);
  torchrt::register_free_memory_probe(c10::DeviceType::CUDA, &cuda_free_memory_bytes);
  torchrt::register_device_feature(c10::DeviceType::CUDA, "grouped_mm_bf16", &grouped_mm_bf16);
  torchrt::register_host_pinning(c10::DeviceType::CUDA, cuda_host_pinning());
  torchrt::register_native_stream(c10::DeviceType::CUDA, [](const torch::Device& device) -> void* {
    return c10::cuda::getCurrentCUDAStream(device.index()).stream();
  });
  return true;
}();

}  // namespace
}  // namespace xpuperf::nvidia
