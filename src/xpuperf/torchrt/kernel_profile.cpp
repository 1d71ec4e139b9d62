#include "xpuperf/torchrt/kernel_profile.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include "xpuperf/torchrt/compat.h"

namespace xpuperf::torchrt {

namespace {
namespace prof = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

// Only the device's activity is asked for: the host's operator records would slow the steps.
const std::set<ActivityType> kProfiledActivities{ActivityType::CUDA};

double kineto_event_ms(const prof::KinetoEvent& e) {
  return compat::event_duration_ms(e);
}
}  // namespace

KernelProfile::KernelProfile() {
  try {
    const ProfilerConfig config(ProfilerState::KINETO);
    prof::prepareProfiler(config, kProfiledActivities);
    prof::enableProfiler(config, kProfiledActivities);
  } catch (const c10::Error& e) {
    throw std::runtime_error(std::string("the Kineto profiler did not start: ") + e.what_without_backtrace());
  }
  running_ = true;
}

KernelProfile::~KernelProfile() {
  if (!running_) return;
  try {
    prof::disableProfiler();
  } catch (...) {  // a destructor that runs while an error unwinds must not throw
  }
}

std::vector<KernelTime> KernelProfile::stop(const std::string& trace_path, std::string* trace_error) {
  if (!running_) return {};
  running_ = false;
  const auto result = prof::disableProfiler();
  if (!trace_path.empty()) {
    std::string error;
    try {
      std::error_code ignored;
      std::filesystem::remove(trace_path, ignored);  // an older trace must not pass for this one
      result->save(trace_path);
      // A LibTorch built without Kineto (Debian's) only warns that it cannot save one.
      if (!std::filesystem::exists(trace_path))
        error = "LibTorch wrote no file (a LibTorch built without Kineto cannot save traces)";
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (trace_error) *trace_error = error;
  }
  std::map<std::string, KernelTime> by_name;
  for (const auto& e : result->events()) {
    if (e.deviceType() != c10::DeviceType::CUDA) continue;  // the host's runtime calls
    KernelTime& k = by_name[e.name()];
    k.total_ms += kineto_event_ms(e);
    ++k.calls;
  }
  std::vector<KernelTime> kernels;
  for (auto& [name, k] : by_name) {
    k.name = name;
    kernels.push_back(std::move(k));
  }
  std::sort(kernels.begin(), kernels.end(), [](const KernelTime& a, const KernelTime& b) {
    return a.total_ms != b.total_ms ? a.total_ms > b.total_ms : a.name < b.name;
  });
  return kernels;
}

}  // namespace xpuperf::torchrt
