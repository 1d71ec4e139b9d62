#include "xpuperf/torchrt/device.h"

#include <dlfcn.h>

#include "xpuperf/core/config.h"

namespace xpuperf::torchrt {

void set_cpu_threads(int threads) {
  torch::set_num_threads(threads);
  // Looked up, not linked: LibTorch may use another BLAS (MKL, Accelerate), or none.
  using SetThreads = void (*)(int);
  if (auto* set_blas_threads = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set_blas_threads(threads);
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

torch::Device choose_device(const std::string& name, int local_rank) {
  if (name == "cpu") return torch::kCPU;
  const bool have_cuda = torch::cuda::is_available();
  if (name == "cuda" && !have_cuda)
    throw ConfigError("device: cuda was asked for, but this LibTorch build or machine has no CUDA device");
  if (name != "cuda" && name != "auto") throw ConfigError("'device' must be auto, cpu or cuda, got '" + name + "'");
  if (!have_cuda) return torch::kCPU;
  const auto count = static_cast<int>(torch::cuda::device_count());
  if (local_rank >= count)
    throw ConfigError("LOCAL_RANK " + std::to_string(local_rank) + " has no CUDA device (" + std::to_string(count) +
                      " visible); lower nproc or check the visible-devices variable");
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank));
}

}  // namespace xpuperf::torchrt
