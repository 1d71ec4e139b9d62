// NVIDIA's monitor library (vendors/nvidia/vendor.yaml: monitor: nvml): its GPUs through NVML,
// loaded at run time with dlopen("libnvidia-ml.so.1"), so that the library is built on any machine,
// needs no NVML headers, and reports nothing where there is no driver. The node agent loads it beside
// the host's samplers (monitor/sampler_plugin.h). Per GPU ("gpu<i>"): util_percent, mem_util_percent,
// mem_used_bytes, mem_total_bytes, power_w, energy_j (the hardware counter, since the monitor
// started), temperature_c, sm_clock_mhz, mem_clock_mhz, throttle_reasons (NVML's bit mask); metrics a
// GPU does not support are left out.

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "xpuperf/monitor/sampler_plugin.h"

namespace xpuperf::nvidia {

namespace {

struct Sample {
  std::string device, metric;
  double value = 0;
};

// The few NVML types and entry points we use, declared here (their ABI is stable across driver
// versions; the _v2 names are the current ones).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
// The v2 query reports driver-reserved memory apart, so `used` is what processes hold (what
// nvidia-smi shows); v1's `used` includes the reserve (~0.6 GiB on an idle H200).
struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
constexpr unsigned int kNvmlMemoryV2 = static_cast<unsigned int>(sizeof(nvmlMemory_v2_t)) | (2u << 24);
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kTemperatureGpu = 0;
constexpr int kClockSm = 1;
constexpr int kClockMem = 2;

struct Nvml {
  void* library = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*memory_v2)(nvmlDevice_t, nvmlMemory_v2_t*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned int*) = nullptr;             // milliwatts
  nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long*) = nullptr;      // millijoules
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int*) = nullptr;  // °C
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int*) = nullptr;        // MHz
  nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long*) = nullptr;

  template <typename F>
  bool load(F& f, const char* name) {
    f = reinterpret_cast<F>(::dlsym(library, name));
    return f != nullptr;
  }
};

class NvmlSampler {
 public:
  explicit NvmlSampler(Nvml nvml) : nvml_(nvml) {
    unsigned int n = 0;
    if (nvml_.count(&n) != kNvmlSuccess) return;
    for (unsigned int i = 0; i < n; ++i) {
      nvmlDevice_t device = nullptr;
      if (nvml_.handle(i, &device) != kNvmlSuccess) continue;
      unsigned long long mj = 0;
      const bool counter = nvml_.energy && nvml_.energy(device, &mj) == kNvmlSuccess;
      devices_.push_back({"gpu" + std::to_string(i), device, counter ? static_cast<double>(mj) : -1.0});
    }
  }
  ~NvmlSampler() {
    nvml_.shutdown();
    ::dlclose(nvml_.library);
  }
  bool has_devices() const { return !devices_.empty(); }

  std::vector<Sample> sample() {
    std::vector<Sample> out;
    for (const auto& d : devices_) {
      nvmlUtilization_t util{};
      if (nvml_.utilization(d.handle, &util) == kNvmlSuccess) {
        out.push_back({d.name, "util_percent", static_cast<double>(util.gpu)});
        out.push_back({d.name, "mem_util_percent", static_cast<double>(util.memory)});
      }
      nvmlMemory_v2_t memory_v2{};
      memory_v2.version = kNvmlMemoryV2;
      nvmlMemory_t memory{};
      if (nvml_.memory_v2 && nvml_.memory_v2(d.handle, &memory_v2) == kNvmlSuccess) {
        out.push_back({d.name, "mem_used_bytes", static_cast<double>(memory_v2.used)});
        out.push_back({d.name, "mem_total_bytes", static_cast<double>(memory_v2.total)});
      } else if (nvml_.memory(d.handle, &memory) == kNvmlSuccess) {
        out.push_back({d.name, "mem_used_bytes", static_cast<double>(memory.used)});
        out.push_back({d.name, "mem_total_bytes", static_cast<double>(memory.total)});
      }
      unsigned int value = 0;
      if (nvml_.power(d.handle, &value) == kNvmlSuccess) out.push_back({d.name, "power_w", value / 1000.0});
      unsigned long long mj = 0;
      if (d.energy_start_mj >= 0 && nvml_.energy(d.handle, &mj) == kNvmlSuccess)
        out.push_back({d.name, "energy_j", (static_cast<double>(mj) - d.energy_start_mj) / 1000.0});
      if (nvml_.temperature(d.handle, kTemperatureGpu, &value) == kNvmlSuccess)
        out.push_back({d.name, "temperature_c", static_cast<double>(value)});
      if (nvml_.clock(d.handle, kClockSm, &value) == kNvmlSuccess)
        out.push_back({d.name, "sm_clock_mhz", static_cast<double>(value)});
      if (nvml_.clock(d.handle, kClockMem, &value) == kNvmlSuccess)
        out.push_back({d.name, "mem_clock_mhz", static_cast<double>(value)});
      unsigned long long reasons = 0;
      if (nvml_.throttle && nvml_.throttle(d.handle, &reasons) == kNvmlSuccess)
        out.push_back({d.name, "throttle_reasons", static_cast<double>(reasons)});
    }
    return out;
  }

 private:
  struct Device {
    std::string name;
    nvmlDevice_t handle;
    double energy_start_mj;  // -1: no energy counter
  };
  Nvml nvml_;
  std::vector<Device> devices_;
};

// Null when NVML cannot be loaded or initialised, or finds no GPU.
std::unique_ptr<NvmlSampler> make_nvml_sampler() {
  Nvml nvml;
  nvml.library = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!nvml.library) return nullptr;
  const bool loaded =
      nvml.load(nvml.init, "nvmlInit_v2") && nvml.load(nvml.shutdown, "nvmlShutdown") &&
      nvml.load(nvml.count, "nvmlDeviceGetCount_v2") && nvml.load(nvml.handle, "nvmlDeviceGetHandleByIndex_v2") &&
      nvml.load(nvml.utilization, "nvmlDeviceGetUtilizationRates") &&
      nvml.load(nvml.memory, "nvmlDeviceGetMemoryInfo") && nvml.load(nvml.power, "nvmlDeviceGetPowerUsage") &&
      nvml.load(nvml.temperature, "nvmlDeviceGetTemperature") && nvml.load(nvml.clock, "nvmlDeviceGetClockInfo");
  // Optional: older drivers lack them.
  nvml.load(nvml.energy, "nvmlDeviceGetTotalEnergyConsumption");
  nvml.load(nvml.memory_v2, "nvmlDeviceGetMemoryInfo_v2");
  if (!nvml.load(nvml.throttle, "nvmlDeviceGetCurrentClocksEventReasons"))
    nvml.load(nvml.throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
  if (!loaded || nvml.init() != kNvmlSuccess) {
    ::dlclose(nvml.library);
    return nullptr;
  }
  auto sampler = std::make_unique<NvmlSampler>(nvml);
  if (!sampler->has_devices()) return nullptr;
  return sampler;
}

// The figures now as "device,metric,value" lines (sampler_plugin.h), all digits kept.
std::size_t sample(char* text, std::size_t capacity) {
  static const auto sampler = make_nvml_sampler();  // opened at the first sample, on the monitor's thread
  if (!sampler) return 0;
  std::string out;
  char line[256];
  for (const auto& s : sampler->sample()) {
    std::snprintf(line, sizeof line, "%s,%s,%.17g\n", s.device.c_str(), s.metric.c_str(), s.value);
    out += line;
  }
  const std::size_t n = std::min(out.size(), capacity);
  std::memcpy(text, out.data(), n);
  return n;
}

}  // namespace
}  // namespace xpuperf::nvidia

XPUPERF_MONITOR_SAMPLER("nvml", xpuperf::nvidia::sample)
