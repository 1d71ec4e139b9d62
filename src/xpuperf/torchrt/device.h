#pragma once
// Which device a rank runs on, and waiting for it: what training, inference and the base cases
// all need before their first tensor and around every timing.

#include <torch/torch.h>

#include <string>

namespace xpuperf::torchrt {

// The device a config asks for: "auto" (CUDA device LOCAL_RANK when there is one, else CPU),
// "cpu" or "cuda". ConfigError when "cuda" has no device or LOCAL_RANK none of its own.
torch::Device choose_device(const std::string& name, int local_rank);

// Waits for the device's queued work (nothing to wait for on the CPU): what timings need.
void synchronize(const torch::Device& device);

}  // namespace xpuperf::torchrt
