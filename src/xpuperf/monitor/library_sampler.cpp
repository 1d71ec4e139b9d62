#include <dlfcn.h>

#include <cstdlib>
#include <sstream>

#include "xpuperf/core/vendor_spec.h"
#include "xpuperf/monitor/sampler.h"
#include "xpuperf/monitor/sampler_plugin.h"

namespace xpuperf::monitor {
namespace {

class LibrarySampler : public Sampler {
 public:
  explicit LibrarySampler(const XpuperfMonitorSamplerV1* sampler) : sampler_(sampler) {}
  std::string name() const override { return sampler_->name ? sampler_->name : "library"; }
  std::vector<Sample> sample() override {
    std::string text(64 * 1024, '\0');
    const std::size_t n = sampler_->sample(text.data(), text.size());
    text.resize(std::min(n, text.size()));
    return parse_sample_lines(text);
  }

 private:
  const XpuperfMonitorSamplerV1* sampler_;
};

}  // namespace

std::vector<Sample> parse_sample_lines(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find(','), b = a == std::string::npos ? a : line.find(',', a + 1);
    if (b == std::string::npos || a == 0 || b == a + 1) continue;
    const std::string value = line.substr(b + 1);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str()) continue;
    out.push_back({line.substr(0, a), line.substr(a + 1, b - a - 1), v});
  }
  return out;
}

std::unique_ptr<Sampler> load_library_sampler(const std::string& path, std::string& error) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    error = "cannot load the monitor library " + path + ": " + ::dlerror();
    return nullptr;
  }
  using Entry = const XpuperfMonitorSamplerV1* (*)();
  auto entry = reinterpret_cast<Entry>(::dlsym(handle, "xpuperf_monitor_sampler_v1"));
  const XpuperfMonitorSamplerV1* sampler = entry ? entry() : nullptr;
  if (!sampler || sampler->api_version != XPUPERF_MONITOR_API_VERSION || !sampler->sample) {
    error = path + " is not an xpuperf monitor library for interface " + std::to_string(XPUPERF_MONITOR_API_VERSION) +
            " (XPUPERF_MONITOR_SAMPLER in monitor/sampler_plugin.h makes one)";
    return nullptr;
  }
  return std::make_unique<LibrarySampler>(sampler);
}

std::unique_ptr<Sampler> vendor_library_sampler(const VendorSpec* spec, std::string& error) {
  error.clear();
  const bool nvml = !spec || !spec->declared || spec->monitor == "nvml";
  if (!nvml && spec->monitor != "library") return nullptr;
  const std::string name = nvml ? "xpuperf_nvidia_monitor" : spec->monitor_library;
  std::string looked_for;
  const std::string path = find_vendor_library(spec ? *spec : VendorSpec{}, name, looked_for);
  if (!path.empty()) return load_library_sampler(path, error);
  error =
      nvml ? "NVIDIA's monitor library (NVML) not found (looked for " + looked_for +
                 "): it is built with xpuperf, beside the binary"
           : spec->file + ": monitor_library '" + spec->monitor_library + "' not found (looked for " + looked_for + ")";
  return nullptr;
}

}  // namespace xpuperf::monitor
