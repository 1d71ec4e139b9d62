#pragma once
// Which device a rank runs on, and waiting for it: what training, inference and the base cases
// all need before their first tensor and around every timing.

#include <torch/torch.h>

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

}  // namespace xpuperf::torchrt
