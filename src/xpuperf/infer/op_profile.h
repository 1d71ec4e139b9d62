#pragma once
// Where an inference pass spends its time, operator by operator: every ATen operator that `work`
// runs is timed through LibTorch's RecordFunction callbacks: between two marks on the device's
// timeline where its vendor brings one (torchrt::DeviceTimeline; NVIDIA's: CUDA events on the
// current stream), so the figure is the device time of the operator's kernels and the work is not
// slowed by synchronising; elsewhere by the wall clock, the device waited for at each mark. Total time includes the
// operators an operator calls (aten::linear calls aten::addmm), self time does not, so self times add up to the pass.
// The models' inference kernels are operators of their own (xpuperf::gemv and the like, models/fused_ops.cpp).
// Operators inside a device graph's replay or a compiled package are not ATen calls and do not show: profile the
// `libtorch` engine for a per-operator view.

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace xpuperf::infer {

struct OpTime {
  std::string name;
  std::int64_t calls = 0;
  double total_ms = 0, self_ms = 0;
};

// The operators `work` ran on `device`, by self time, largest first.
std::vector<OpTime> profile_ops(const std::function<void()>& work, torch::Device device);

// How profile_ops times on `device`, for the results: "device time between timeline marks" or
// "wall clock".
std::string op_profile_timing(const torch::Device& device);

// The `top` largest as JSON (name, calls, total_ms, self_ms, self_share of all self time).
nlohmann::json op_profile_json(const std::vector<OpTime>& ops, std::size_t top);

// A Markdown table of the `top` largest, with each one's share of the self time.
std::string op_profile_table(const std::vector<OpTime>& ops, std::size_t top);

}  // namespace xpuperf::infer
