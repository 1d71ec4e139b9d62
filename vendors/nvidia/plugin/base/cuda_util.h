#pragma once
// What the CUDA base cases share: error checks that throw with the call that failed, an event
// timer, and the device count for filters.

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace xpuperf::base::cuda {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}
#define XPUPERF_CUDA(call) ::xpuperf::base::cuda::check((call), #call)

// How many devices the runtime sees (0 when there is no driver or device); never throws.
inline int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear it
    return 0;
  }
  return n;
}

inline std::string need_device(int device) {
  const int n = device_count();
  if (n == 0) return "no CUDA device (or no driver) on this host";
  if (device >= n) return "device " + std::to_string(device) + " asked for, but this host has " + std::to_string(n);
  return "";
}

// Seconds between two events recorded around work on `stream`.
class EventTimer {
 public:
  EventTimer() {
    XPUPERF_CUDA(cudaEventCreate(&start_));
    XPUPERF_CUDA(cudaEventCreate(&stop_));
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start(cudaStream_t stream) { XPUPERF_CUDA(cudaEventRecord(start_, stream)); }
  double stop(cudaStream_t stream) {
    XPUPERF_CUDA(cudaEventRecord(stop_, stream));
    XPUPERF_CUDA(cudaEventSynchronize(stop_));
    float ms = 0;
    XPUPERF_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
    return ms / 1000.0;
  }

 private:
  cudaEvent_t start_{}, stop_{};
};

// Device memory freed on scope exit.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) { XPUPERF_CUDA(cudaMalloc(&ptr_, bytes)); }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_;
};

}  // namespace xpuperf::base::cuda
