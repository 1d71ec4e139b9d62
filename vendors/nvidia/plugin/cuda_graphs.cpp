// NVIDIA's device graphs (torchrt::DeviceGraph): CUDA graphs through LibTorch's at::cuda::CUDAGraph,
// which the training step (cuda_graphs: true) captures and replays. Outside the plug-in syntax check
// (tests/cuda_host/syntax_check.sh): CUDAGraph's capture_begin takes the capture mode only from
// LibTorch 2.x, and that check reads this machine's LibTorch 1.13.

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <functional>
#include <memory>

#include "xpuperf/torchrt/device.h"

namespace xpuperf::nvidia {
namespace {

class CudaDeviceGraph : public torchrt::DeviceGraph {
 public:
  explicit CudaDeviceGraph(const torch::Device& device) : device_(device) {}

  void capture(const std::function<void()>& work) override {
    const c10::cuda::CUDAGuard device_guard(device_.index());
    torch::cuda::synchronize(device_.index());
    const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, device_.index());
    {
      const c10::cuda::CUDAStreamGuard stream_guard(stream);
      // Thread-local: the loader's threads go on with their own CUDA work (nvJPEG, copies) during
      // the capture, which the default global mode would count as an error of the capture.
      graph_.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
      work();
      graph_.capture_end();
    }
    stream.synchronize();
  }

  void replay() override { graph_.replay(); }

 private:
  torch::Device device_;
  at::cuda::CUDAGraph graph_;
};

// Registered as the binary loads, as nvidia_runtime.cpp's.
const bool registered = [] {
  torchrt::register_device_graphs(c10::DeviceType::CUDA, [](const torch::Device& device) {
    return std::unique_ptr<torchrt::DeviceGraph>(std::make_unique<CudaDeviceGraph>(device));
  });
  return true;
}();

}  // namespace
}  // namespace xpuperf::nvidia
