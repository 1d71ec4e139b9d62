#include "xpuperf/torchrt/vendor_runtime.h"

#include <dlfcn.h>
#include <torch/version.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include "xpuperf/core/log.h"
#include "xpuperf/torchrt/compat.h"
#include "xpuperf/torchrt/vendor_plugin_api.h"
#include "xpuperf/torchrt/vendor_registry.h"

namespace xpuperf::torchrt {
namespace fs = std::filesystem;

namespace {

std::mutex& vendor_mutex() {
  static std::mutex m;
  return m;
}

std::unique_ptr<ActiveVendor>& active_slot() {
  static std::unique_ptr<ActiveVendor> active;
  return active;
}

class CollectingRegistrar : public Registrar {
 public:
  void device(const std::string& name) override { devices.push_back(name); }
  void collective_backend(const std::string& name, CollectiveFactory factory) override {
    backends.emplace_back(name, std::move(factory));
  }
  std::vector<std::string> devices;
  std::vector<std::pair<std::string, CollectiveFactory>> backends;
};

using EntryPoint = const XpuperfVendorPluginV1* (*)();

// The plug-in's descriptor: from the library, or for "builtin" none (the device and collectives
// are LibTorch's own: CUDA and NCCL).
const XpuperfVendorPluginV1* open_plugin(const VendorSpec& spec, const std::string& library_dir, std::string& path) {
  std::string tried;
  path = find_vendor_library(spec, spec.plugin, tried, library_dir);
  if (path.empty()) {
    throw VendorError(spec.file + ": plugin '" + spec.plugin + "' not found (looked for " + tried +
                      "): build it (`make build` builds vendors/*/plugin) or correct 'plugin'");
  }
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const std::string why = ::dlerror();
    std::string hint = "check that it is a shared library for this machine";
    if (why.find("undefined symbol") != std::string::npos)
      hint = "it was most likely built against another LibTorch or another xpuperf: rebuild it against LibTorch " +
             std::string(TORCH_VERSION) + " and this xpuperf (docs/VENDORS.md)";
    throw VendorError(spec.file + ": the plug-in " + path + " cannot be loaded: " + why + "; " + hint);
  }
  auto entry = reinterpret_cast<EntryPoint>(::dlsym(handle, "xpuperf_vendor_plugin_v1"));
  if (!entry) {
    for (int v = 2; v <= 9; ++v)
      if (::dlsym(handle, ("xpuperf_vendor_plugin_v" + std::to_string(v)).c_str()))
        throw VendorError(spec.file + ": the plug-in " + path + " is written for xpuperf's plug-in interface " +
                          std::to_string(v) +
                          ", and this xpuperf speaks interface 1: build the plug-in from a "
                          "matching xpuperf, or update xpuperf");
    throw VendorError(spec.file + ": " + path +
                      " is not an xpuperf plug-in: it exports no xpuperf_vendor_plugin_v1 (XPUPERF_VENDOR_PLUGIN in "
                      "torchrt/vendor_plugin_api.h makes it; docs/VENDORS.md)");
  }
  const XpuperfVendorPluginV1* plugin = entry();
  if (!plugin || plugin->api_version != XPUPERF_VENDOR_API_VERSION)
    throw VendorError(spec.file + ": the plug-in " + path + " says interface version " +
                      (plugin ? std::to_string(plugin->api_version) : std::string("none")) +
                      ", and this xpuperf speaks " + std::to_string(XPUPERF_VENDOR_API_VERSION) +
                      ": rebuild it against this xpuperf's headers");
  const std::string its_torch = plugin->torch_version ? plugin->torch_version : "";
  if (its_torch != TORCH_VERSION)
    throw VendorError(spec.file + ": the plug-in " + path + " was built against LibTorch " + its_torch +
                      ", and xpuperf-torch runs LibTorch " + TORCH_VERSION +
                      ": rebuild the plug-in against this LibTorch (their C++ interfaces differ between versions)");
  if (!plugin->init) throw VendorError(spec.file + ": the plug-in " + path + " gives no init function");
  return plugin;
}

// Checks that the plug-in brought what the vendor.yaml promises.
void check_promises(const VendorSpec& spec, const CollectingRegistrar& got, const std::string& path) {
  if (spec.device_type == "privateuse1") {
    if (got.devices.empty())
      throw VendorError(spec.file + ": device_type privateuse1 named '" + spec.device_name + "', but the plug-in " +
                        path + " registered no device (Registrar::device)");
    if (got.devices.size() > 1 || got.devices[0] != spec.device_name)
      throw VendorError(spec.file + ": device_name is '" + spec.device_name + "', but the plug-in " + path +
                        " registered '" + got.devices[0] + "'" + (got.devices.size() > 1 ? " and more" : "") +
                        ": make them the same");
  } else if (!got.devices.empty()) {
    throw VendorError(spec.file + ": the plug-in " + path + " registered the device '" + got.devices[0] +
                      "', but device_type is " + spec.device_type + ": say device_type: privateuse1");
  }
  const auto& b = spec.collective_backend;
  const bool builtin = b == "gloo" || b == "nccl";
  bool registered = false;
  std::string names;
  for (const auto& [name, factory] : got.backends) {
    registered = registered || name == b;
    names += (names.empty() ? "" : ", ") + name;
  }
  if (!builtin && !registered)
    throw VendorError(spec.file + ": collective_backend is '" + b + "', but the plug-in " + path + " registered " +
                      (names.empty() ? std::string("none") : names) +
                      " (Registrar::collective_backend): correct one of them");
}

}  // namespace

const ActiveVendor& activate_vendor(const VendorSpec& spec, const std::string& library_dir) {
  std::lock_guard<std::mutex> lock(vendor_mutex());
  auto& active = active_slot();
  if (active) {
    if (active->spec.vendor == spec.vendor) return *active;
    throw VendorError("this process already runs for vendor '" + active->spec.vendor + "' (" + active->plugin_path +
                      "); vendor '" + spec.vendor +
                      "' needs a process of its own (PyTorch has one slot for an "
                      "out-of-tree device): run its cases separately");
  }
  auto vendor = std::make_unique<ActiveVendor>();
  vendor->spec = spec;
  vendor->device_name = spec.declared ? spec.device_name : "";
  if (spec.has_plugin() && !spec.is_builtin_plugin()) {
    const XpuperfVendorPluginV1* plugin = open_plugin(spec, library_dir, vendor->plugin_path);
    CollectingRegistrar registrar;
    try {
      plugin->init(registrar);
    } catch (const c10::Error& e) {
      throw VendorError(spec.file + ": the plug-in " + vendor->plugin_path +
                        " failed to start: " + e.what_without_backtrace());
    } catch (const std::exception& e) {
      throw VendorError(spec.file + ": the plug-in " + vendor->plugin_path + " failed to start: " + e.what());
    }
    check_promises(spec, registrar, vendor->plugin_path);
    if (!registrar.devices.empty()) compat::name_privateuse1(registrar.devices[0]);
    for (auto& [name, factory] : registrar.backends) register_collective_backend(name, std::move(factory));
    vendor->plugin_name = plugin->name ? plugin->name : spec.vendor;
    vendor->plugin_version = plugin->version ? plugin->version : "";
    log::info("vendor " + spec.vendor + ": plug-in " + vendor->plugin_name + " " + vendor->plugin_version + " (" +
              vendor->plugin_path + ")");
  } else if (spec.is_builtin_plugin()) {
    vendor->plugin_name = spec.vendor + " (built in)";
    vendor->plugin_version = "LibTorch " + std::string(TORCH_VERSION);
    vendor->plugin_path = "builtin";
  }
  active = std::move(vendor);
  return *active;
}

const ActiveVendor* active_vendor() {
  std::lock_guard<std::mutex> lock(vendor_mutex());
  return active_slot().get();
}

std::string device_text(const std::string& libtorch_text) {
  const std::string slot = "privateuseone";
  const ActiveVendor* vendor = active_vendor();
  if (!vendor || vendor->spec.device_type != "privateuse1" || libtorch_text.compare(0, slot.size(), slot) != 0)
    return libtorch_text;
  return vendor->device_name + libtorch_text.substr(slot.size());
}

}  // namespace xpuperf::torchrt
