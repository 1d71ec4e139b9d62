#pragma once
// Which device a rank runs on, and waiting for it: what training, inference and the base cases
// all need before their first tensor and around every timing.

#include <torch/torch.h>

#include <functional>
#include <string>

namespace xpuperf::torchrt {

// The device a config asks for: "auto" (the active vendor's plug-in device when it brings one, else
// CUDA device LOCAL_RANK when there is one, else CPU), "cpu", "cuda" or the plug-in device's name
// ("sim"). ConfigError when the device is missing or LOCAL_RANK has none of its own.
torch::Device choose_device(const std::string& name, int local_rank);

// The CPU threads this process computes with: LibTorch's intra-op threads and, where LibTorch
// multiplies through OpenBLAS (Debian's), OpenBLAS's own, which otherwise start one a core
// whatever LibTorch was told: two ranks of one thread each then ran four BLAS threads on two cores.
void set_cpu_threads(int threads);

// Waits for the device's queued work (nothing to wait for on the CPU): what timings need. Works for
// any device with a registered guard.
void synchronize(const torch::Device& device);

// The most memory a device's allocator has held in tensors at once, in bytes, as the device's vendor
// reports it (NVIDIA's plug-in: CUDA's caching allocator; the sim's: its arena); -1 where none does.
using PeakMemoryProbe = std::function<double(const torch::Device&)>;
void register_peak_memory_probe(c10::DeviceType type, PeakMemoryProbe probe);
double peak_device_memory_bytes(const torch::Device& device);

// Whether a device has `feature`, as its vendor says; false where none does. NVIDIA's plug-in says
// "grouped_mm_bf16" (ATen's grouped GEMM has kernels for bf16 on this GPU: Hopper, Blackwell).
using FeatureProbe = std::function<bool(const torch::Device&)>;
void register_device_feature(c10::DeviceType type, const std::string& feature, FeatureProbe probe);
bool device_has_feature(const torch::Device& device, const std::string& feature);

}  // namespace xpuperf::torchrt
