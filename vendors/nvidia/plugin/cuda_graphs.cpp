// NVIDIA's device graphs (torchrt::DeviceGraph): CUDA graphs through LibTorch's at::cuda::CUDAGraph,
// which the training step (cuda_graphs: true), the libtorch-graph engine and the decoder's buckets
// capture and replay. Outside the plug-in syntax check
// (tests/cuda_host/syntax_check.sh): CUDAGraph's capture_begin takes the capture mode only from
// LibTorch 2.x, and that check reads this machine's LibTorch 1.13.

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <stdexcept>

#include "xpuperf/torchrt/device.h"

namespace xpuperf::nvidia {
namespace {

// Spelled from graph_pool_handle(): the pool id's type moved between c10 namespaces over versions.
using MempoolId = decltype(at::cuda::graph_pool_handle());

class CudaDeviceGraph : public torchrt::DeviceGraph {
 public:
  // A pool id of {0, 0} asks the capture for a private pool of the graph's own.
  CudaDeviceGraph(const torch::Device& device, MempoolId pool) : device_(device), pool_(pool) {}

  void capture(const std::function<void()>& work) override {
    const c10::cuda::CUDAGuard device_guard(device_.index());
    torch::cuda::synchronize(device_.index());
    const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, device_.index());
    {
      const c10::cuda::CUDAStreamGuard stream_guard(stream);
      // Thread-local: the loader's threads go on with their own CUDA work (nvJPEG, copies) during
      // the capture, which the default global mode would count as an error of the capture.
      graph_.capture_begin(pool_, cudaStreamCaptureModeThreadLocal);
      work();
      graph_.capture_end();
    }
    stream.synchronize();
  }

  void replay() override { graph_.replay(); }

  MempoolId pool() { return graph_.pool(); }

 private:
  torch::Device device_;
  MempoolId pool_;
  at::cuda::CUDAGraph graph_;
};

// Registered as the binary loads, as nvidia_runtime.cpp's.
const bool graphs_registered = [] {
  torchrt::register_device_graphs(
      c10::DeviceType::CUDA, [](const torch::Device& device, const torchrt::DeviceGraph* share_memory_with) {
        MempoolId pool = {0, 0};
        if (share_memory_with) {
          // const_cast: CUDAGraph::pool() is not const, though it only reads the id.
          auto* shared = dynamic_cast<CudaDeviceGraph*>(const_cast<torchrt::DeviceGraph*>(share_memory_with));
          if (!shared) throw std::invalid_argument("a CUDA graph can share memory only with another CUDA graph");
          pool = shared->pool();
        }
        return std::unique_ptr<torchrt::DeviceGraph>(std::make_unique<CudaDeviceGraph>(device, pool));
      });
  return true;
}();

}  // namespace
}  // namespace xpuperf::nvidia
