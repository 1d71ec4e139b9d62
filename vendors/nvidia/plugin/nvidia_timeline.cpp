// NVIDIA's device timeline (torchrt::DeviceTimeline): CUDA events with timing, recorded on the current
// stream, which the inference op profile marks around each operator.

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "xpuperf/torchrt/device.h"

namespace xpuperf::nvidia {
namespace {

class CudaTimeline : public torchrt::DeviceTimeline {
 public:
  explicit CudaTimeline(const torch::Device& device) : device_(device) {}
  ~CudaTimeline() override {
    for (const cudaEvent_t event : events_) cudaEventDestroy(event);
  }
  CudaTimeline(const CudaTimeline&) = delete;
  CudaTimeline& operator=(const CudaTimeline&) = delete;

  std::size_t mark() override {
    const c10::cuda::CUDAGuard guard(device_.index());
    cudaEvent_t event = nullptr;
    C10_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDefault));  // with timing
    events_.push_back(event);
    C10_CUDA_CHECK(cudaEventRecord(event, c10::cuda::getCurrentCUDAStream(device_.index()).stream()));
    return events_.size() - 1;
  }

  double elapsed_ms(std::size_t from, std::size_t to) const override {
    float ms = 0;
    C10_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[from], events_[to]));
    return ms;
  }

 private:
  torch::Device device_;
  std::vector<cudaEvent_t> events_;
};

// Registered as the binary loads, as nvidia_runtime.cpp's.
const bool timeline_registered = [] {
  torchrt::register_device_timeline(c10::DeviceType::CUDA, [](const torch::Device& device) {
    return std::unique_ptr<torchrt::DeviceTimeline>(std::make_unique<CudaTimeline>(device));
  });
  return true;
}();

}  // namespace
}  // namespace xpuperf::nvidia
