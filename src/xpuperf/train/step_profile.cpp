#include "xpuperf/train/step_profile.h"

#include <chrono>
#include <filesystem>
#include <stdexcept>

#include "xpuperf/torchrt/kernel_profile.h"

namespace xpuperf::train {

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

StepProfile::StepProfile(std::int64_t skip_steps, std::int64_t steps, std::string trace_path)
    : first_(skip_steps), steps_(steps), trace_path_(std::move(trace_path)) {}

StepProfile::~StepProfile() = default;

void StepProfile::start() {
  started_ = true;
  try {
    profile_ = std::make_unique<torchrt::KernelProfile>();
  } catch (const std::runtime_error& e) {
    result_ = {{"error", e.what()}};
    return;
  }
  started_at_ = now_seconds();
}

void StepProfile::stop(std::int64_t steps_done) {
  if (!profile_) return;
  const double wall = now_seconds() - started_at_;
  std::string trace_error;
  const auto kernels = profile_->stop(trace_path_, &trace_error);
  profile_.reset();
  const auto steps = static_cast<double>(steps_done - first_);
  if (steps <= 0) return;
  double device_ms = 0;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& k : kernels) {
    device_ms += k.total_ms;
    if (list.size() < kShown)
      list.push_back({{"name", k.name},
                      {"ms_per_step", k.total_ms / steps},
                      {"calls_per_step", static_cast<double>(k.calls) / steps}});
  }
  result_ = {{"steps", steps_done - first_},
             {"step_ms", wall * 1e3 / steps},
             {"device_ms_per_step", device_ms / steps},
             {"distinct_kernels", kernels.size()},
             {"kernels", list}};
  if (!trace_path_.empty()) result_["trace"] = trace_error.empty() ? trace_path_ : "not written: " + trace_error;
  if (kernels.empty())
    result_["note"] =
        "no device kernels were recorded: a run on the CPU has none; on a GPU the profiler saw no device activity "
        "(CUPTI missing or in use by another profiler)";
}

std::string StepProfile::trace_path_of_rank(const std::string& path, int rank, int world_size) {
  if (path.empty() || world_size <= 1) return path;
  const std::filesystem::path p(path);
  const std::string tag = ".rank" + std::to_string(rank);
  return (p.parent_path() / (p.stem().string() + tag + p.extension().string())).string();
}

void StepProfile::describe(nlohmann::json& finished) const {
  if (!result_.is_null()) finished["kernel_profile"] = result_;
}

}  // namespace xpuperf::train
