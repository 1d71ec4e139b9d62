#include "xpuperf/torchrt/device.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <dlfcn.h>

#include <map>
#include <utility>

#include "xpuperf/core/config.h"
#include "xpuperf/torchrt/vendor_runtime.h"

namespace xpuperf::torchrt {

namespace {
// The vendors' memory figures of a device: its peak and its free memory.
enum class MemoryFigure { Peak, Free };
std::map<std::pair<c10::DeviceType, MemoryFigure>, std::function<double(const torch::Device&)>>& memory_probes() {
  static std::map<std::pair<c10::DeviceType, MemoryFigure>, std::function<double(const torch::Device&)>> probes;
  return probes;
}

// The figure as the device's vendor reports it; -1 where none does.
double memory_figure(const torch::Device& device, MemoryFigure figure) {
  const auto& probes = memory_probes();
  const auto it = probes.find({device.type(), figure});
  return it == probes.end() ? -1 : it->second(device);
}

std::map<std::pair<c10::DeviceType, std::string>, FeatureProbe>& feature_probes() {
  static std::map<std::pair<c10::DeviceType, std::string>, FeatureProbe> probes;
  return probes;
}

std::map<c10::DeviceType, NativeStreamProbe>& native_stream_probes() {
  static std::map<c10::DeviceType, NativeStreamProbe> probes;
  return probes;
}

std::map<c10::DeviceType, DeviceGraphFactory>& graph_factories() {
  static std::map<c10::DeviceType, DeviceGraphFactory> factories;
  return factories;
}
std::map<c10::DeviceType, HostPinning>& host_pinnings() {
  static std::map<c10::DeviceType, HostPinning> pinnings;
  return pinnings;
}

std::map<c10::DeviceType, DeviceTimelineFactory>& timeline_factories() {
  static std::map<c10::DeviceType, DeviceTimelineFactory> factories;
  return factories;
}
}  // namespace

std::optional<c10::Stream> side_stream(const torch::Device& device) {
  if (device.is_cpu() || !c10::impl::hasDeviceGuardImpl(device.type())) return std::nullopt;
  try {
    return c10::impl::getDeviceGuardImpl(device.type())->getStreamFromGlobalPool(device, /*isHighPriority=*/false);
  } catch (const c10::Error&) {  // the guard keeps no stream pool
    return std::nullopt;
  }
}

void register_native_stream(c10::DeviceType type, NativeStreamProbe probe) {
  native_stream_probes()[type] = std::move(probe);
}

void* native_stream(const torch::Device& device) {
  const auto& probes = native_stream_probes();
  const auto it = probes.find(device.type());
  return it == probes.end() ? nullptr : it->second(device);
}

void register_device_graphs(c10::DeviceType type, DeviceGraphFactory factory) {
  graph_factories()[type] = std::move(factory);
}

bool device_has_graphs(c10::DeviceType type) {
  return graph_factories().count(type) > 0;
}

std::unique_ptr<DeviceGraph> make_device_graph(const torch::Device& device, const DeviceGraph* share_memory_with) {
  const auto& factories = graph_factories();
  const auto it = factories.find(device.type());
  return it == factories.end() ? nullptr : it->second(device, share_memory_with);
}

void register_device_timeline(c10::DeviceType type, DeviceTimelineFactory factory) {
  timeline_factories()[type] = std::move(factory);
}

void register_host_pinning(c10::DeviceType type, HostPinning pinning) {
  host_pinnings()[type] = std::move(pinning);
}

const HostPinning* host_pinning(c10::DeviceType type) {
  const auto& pinnings = host_pinnings();
  const auto it = pinnings.find(type);
  return it == pinnings.end() ? nullptr : &it->second;
}

bool device_has_timeline(c10::DeviceType type) {
  return timeline_factories().count(type) > 0;
}

std::unique_ptr<DeviceTimeline> make_device_timeline(const torch::Device& device) {
  const auto& factories = timeline_factories();
  const auto it = factories.find(device.type());
  return it == factories.end() ? nullptr : it->second(device);
}

void register_device_feature(c10::DeviceType type, const std::string& feature, FeatureProbe probe) {
  feature_probes()[{type, feature}] = std::move(probe);
}

bool device_has_feature(const torch::Device& device, const std::string& feature) {
  const auto& probes = feature_probes();
  const auto it = probes.find({device.type(), feature});
  return it != probes.end() && it->second(device);
}

void register_peak_memory_probe(c10::DeviceType type, PeakMemoryProbe probe) {
  memory_probes()[{type, MemoryFigure::Peak}] = std::move(probe);
}

double peak_device_memory_bytes(const torch::Device& device) {
  return memory_figure(device, MemoryFigure::Peak);
}

void register_free_memory_probe(c10::DeviceType type, FreeMemoryProbe probe) {
  memory_probes()[{type, MemoryFigure::Free}] = std::move(probe);
}

double free_device_memory_bytes(const torch::Device& device) {
  return memory_figure(device, MemoryFigure::Free);
}

void set_cpu_threads(int threads) {
  torch::set_num_threads(threads);
  // Looked up, not linked: LibTorch may use another BLAS (MKL, Accelerate), or none.
  using SetThreads = void (*)(int);
  if (auto* set_blas_threads = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set_blas_threads(threads);
}

namespace {

std::vector<BuiltinDevice>& builtin_devices() {
  static std::vector<BuiltinDevice> devices;
  return devices;
}

const BuiltinDevice* builtin_of(c10::DeviceType type) {
  for (const auto& d : builtin_devices())
    if (d.type == type) return &d;
  return nullptr;
}

}  // namespace

void register_builtin_device(BuiltinDevice device) {
  builtin_devices().push_back(std::move(device));
}

void synchronize(const torch::Device& device) {
  if (device.is_cpu()) return;
  if (const BuiltinDevice* builtin = builtin_of(device.type()); builtin && builtin->synchronize)
    return builtin->synchronize(device);
  // Any other device: its current stream's queued work, through the device's guard.
  const auto* guard = c10::impl::getDeviceGuardImpl(device.type());
  guard->synchronizeStream(guard->getStream(device));
}

namespace {

// The plug-in's device (vendor.yaml's device_type: privateuse1), device `local_rank` of those visible.
torch::Device plugin_device(const ActiveVendor& vendor, int local_rank) {
  const auto type = c10::DeviceType::PrivateUse1;
  if (!c10::impl::hasDeviceGuardImpl(type))
    throw ConfigError(vendor.spec.file + ": the plug-in " + vendor.plugin_path + " registered no device guard for " +
                      vendor.device_name + " (C10_REGISTER_GUARD_IMPL(PrivateUse1, ...); docs/VENDORS.md)");
  const int count = c10::impl::getDeviceGuardImpl(type)->deviceCount();
  if (local_rank >= count)
    throw ConfigError("LOCAL_RANK " + std::to_string(local_rank) + " has no " + vendor.device_name + " device (" +
                      std::to_string(count) + " visible); lower nproc or check " +
                      (vendor.spec.visible_devices_env.empty() ? std::string("the visible-devices variable")
                                                               : vendor.spec.visible_devices_env));
  return torch::Device(type, static_cast<c10::DeviceIndex>(local_rank));
}

}  // namespace

torch::Device choose_device(const std::string& name, int local_rank) {
  if (name == "cpu") return torch::kCPU;
  const ActiveVendor* vendor = active_vendor();
  const bool plugin = vendor && vendor->spec.device_type == "privateuse1";
  if (plugin && (name == "auto" || name == vendor->device_name)) return plugin_device(*vendor, local_rank);
  const auto& builtins = builtin_devices();
  const BuiltinDevice* builtin = nullptr;
  for (const auto& d : builtins)
    if (name == "auto" || name == d.name) {
      builtin = &d;
      break;
    }
  if (!builtin && name != "auto") {
    std::string names = "auto, cpu";
    if (plugin) names += ", " + vendor->device_name;
    for (const auto& d : builtins) names += ", " + d.name;
    throw ConfigError("'device' must be " + names + ", got '" + name + "'" +
                      (plugin ? ""
                              : " (a vendor's own device needs that vendor: --vendor; this build's vendors "
                                "bring no other)"));
  }
  const int count = builtin && c10::impl::hasDeviceGuardImpl(builtin->type)
                        ? static_cast<int>(c10::impl::getDeviceGuardImpl(builtin->type)->deviceCount())
                        : 0;
  if (count == 0) {
    if (name == "auto") return torch::kCPU;
    throw ConfigError("device: " + name + " was asked for, but this LibTorch build or machine has no " + name +
                      " device");
  }
  if (local_rank >= count)
    throw ConfigError("LOCAL_RANK " + std::to_string(local_rank) + " has no " + builtin->name + " device (" +
                      std::to_string(count) + " visible); lower nproc or check the visible-devices variable");
  return torch::Device(builtin->type, static_cast<c10::DeviceIndex>(local_rank));
}

}  // namespace xpuperf::torchrt
