#include "xpuperf/core/vendor_spec.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "xpuperf/core/config.h"
#include "xpuperf/core/strings.h"

namespace xpuperf {

const std::vector<std::string>& known_device_types() {
  static const std::vector<std::string> types{"cpu", "cuda", "privateuse1"};
  return types;
}

const std::vector<std::string>& builtin_collective_backends() {
  static const std::vector<std::string> backends{"gloo", "nccl"};
  return backends;
}

// Named, not anonymous: the unity build compiles this file with others that have helpers of these names.
namespace vendor_yaml {

bool contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// A name that can stand in a device string ("sim:0") and a library name: lower-case letters,
// digits and '_', starting with a letter.
bool is_identifier(const std::string& s) {
  if (s.empty() || s.size() > 64 || !(s[0] >= 'a' && s[0] <= 'z')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

std::string where(const Config& config, const std::string& key) {
  return config.at(key).source.str();
}

std::string text_of(const Config& config, const std::string& key, const std::string& fallback) {
  if (!config.has(key)) return fallback;
  const auto& entry = config.at(key);
  if (!entry.value.IsScalar())
    throw ConfigError(where(config, key) + ": '" + key + "' must be a single value, got " + value_text(entry.value));
  return config.get_string(key);
}

VendorSpec spec_from(const Config& config, const std::string& vendor, const std::string& file) {
  static const std::set<std::string> keys{
      "device_type",        "device_name", "visible_devices_env", "container_device_options",
      "collective_backend", "monitor",     "monitor_library",     "plugin"};
  for (const auto& key : config.keys())
    if (!keys.count(key))
      throw ConfigError(
          where(config, key) + ": unknown key '" + printable(key) +
          "' in a vendor.yaml (known: device_type, device_name, visible_devices_env, "
          "container_device_options, collective_backend, monitor, monitor_library, plugin; docs/VENDORS.md)");
  VendorSpec spec;
  spec.vendor = vendor;
  spec.file = file;
  if (!config.has("device_type"))
    throw ConfigError(file + ": 'device_type' is missing: say which device the vendor runs on (" +
                      join_or_none(known_device_types()) + ")");
  spec.device_type = text_of(config, "device_type", "");
  if (!contains(known_device_types(), spec.device_type))
    throw ConfigError(where(config, "device_type") + ": unknown device_type '" + printable(spec.device_type) +
                      "' (known: " + join_or_none(known_device_types()) +
                      "; a chip with its own PyTorch backend, such as torch_npu or torch_mlu, is privateuse1)");
  spec.plugin = text_of(config, "plugin", "");
  if (spec.device_type == "privateuse1") {
    if (!config.has("device_name"))
      throw ConfigError(file +
                        ": 'device_name' is missing: a privateuse1 device needs the name it goes by (npu, mlu, sim)");
    spec.device_name = text_of(config, "device_name", "");
    if (!is_identifier(spec.device_name) || contains(known_device_types(), spec.device_name))
      throw ConfigError(where(config, "device_name") + ": device_name '" + printable(spec.device_name) +
                        "' must be a lower-case name of letters, digits and '_' other than cpu, cuda and privateuse1");
    if (!spec.has_plugin())
      throw ConfigError(file +
                        ": a privateuse1 device needs 'plugin': the library that brings the device to "
                        "LibTorch (docs/VENDORS.md)");
  } else {
    spec.device_name = text_of(config, "device_name", spec.device_type);
    if (spec.device_name != spec.device_type)
      throw ConfigError(where(config, "device_name") + ": a " + spec.device_type + " device is called '" +
                        spec.device_type + "', not '" + printable(spec.device_name) + "'");
  }
  spec.visible_devices_env = text_of(config, "visible_devices_env", "");
  if (config.has("container_device_options"))
    spec.container_device_options = config.get_string_list("container_device_options");
  spec.collective_backend =
      text_of(config, "collective_backend", spec.device_type == "cuda" ? std::string("nccl") : std::string("gloo"));
  if (!is_identifier(spec.collective_backend))
    throw ConfigError(where(config, "collective_backend") + ": collective_backend '" +
                      printable(spec.collective_backend) + "' must be a lower-case name (gloo, nccl, hccl, ...)");
  if (!contains(builtin_collective_backends(), spec.collective_backend) && !spec.has_plugin())
    throw ConfigError(where(config, "collective_backend") + ": collective_backend '" + spec.collective_backend +
                      "' is not one LibTorch brings (" + join_or_none(builtin_collective_backends()) +
                      "), and no 'plugin' is named to register it");
  spec.monitor = text_of(config, "monitor", "host");
  static const std::vector<std::string> monitors{"host", "nvml", "command", "library"};
  if (!contains(monitors, spec.monitor))
    throw ConfigError(where(config, "monitor") + ": unknown monitor '" + printable(spec.monitor) +
                      "' (known: host, nvml, command: the tool in the vendor's monitor.yaml, library: "
                      "monitor_library's sampler)");
  spec.monitor_library = text_of(config, "monitor_library", "");
  if (spec.monitor == "library" && spec.monitor_library.empty())
    throw ConfigError(where(config, "monitor") +
                      ": monitor: library needs 'monitor_library': the sampler library "
                      "(monitor/sampler_plugin.h)");
  if (spec.monitor != "library" && !spec.monitor_library.empty())
    throw ConfigError(where(config, "monitor_library") + ": monitor_library is read only with monitor: library");
  if (spec.has_plugin() && !spec.is_builtin_plugin() && !is_identifier(spec.plugin) &&
      spec.plugin.find(".so") == std::string::npos)
    throw ConfigError(where(config, "plugin") + ": plugin '" + printable(spec.plugin) +
                      "' must be builtin, a library name (lib<name>.so beside xpuperf-torch) or a path to a .so file");
  return spec;
}

}  // namespace vendor_yaml

std::string find_vendor_library(const VendorSpec& spec, const std::string& name, std::string& looked_for,
                                const std::string& binary_dir) {
  namespace fs = std::filesystem;
  const fs::path vendor_dir = fs::path(spec.file).parent_path();
  std::vector<fs::path> candidates;
  const bool is_path =
      name.find('/') != std::string::npos || (name.size() > 3 && name.compare(name.size() - 3, 3, ".so") == 0);
  if (is_path) {
    candidates.push_back(fs::path(name).is_absolute() ? fs::path(name) : vendor_dir / name);
  } else {
    fs::path here = binary_dir;
    if (here.empty()) {
      std::error_code ec;
      const auto exe = fs::read_symlink("/proc/self/exe", ec);
      here = ec ? fs::path(".") : exe.parent_path();
    }
    candidates.push_back(here / ("lib" + name + ".so"));
    candidates.push_back(vendor_dir / ("lib" + name + ".so"));
  }
  looked_for.clear();
  for (const auto& c : candidates) {
    if (std::error_code ec; fs::exists(c, ec)) return c.string();
    looked_for += (looked_for.empty() ? "" : ", ") + c.string();
  }
  return "";
}

VendorSpec parse_vendor_spec(const std::string& text, const std::string& vendor, const std::string& file) {
  Diagnostics diags;
  const auto config = load_config_text(text, file, diags);
  if (!config) throw ConfigError(diags.format(Severity::Error));
  return vendor_yaml::spec_from(*config, vendor, file);
}

VendorSpec load_vendor_spec(const Repo& repo, const std::string& vendor) {
  const std::string dir = repo.vendor_dir(vendor);
  const std::string file = dir + "/vendor.yaml";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw ConfigError("unknown vendor '" + printable(vendor) + "': " + dir +
                      " does not exist (vendors: " + join_or_none(repo.vendors()) + ")");
  if (!std::filesystem::exists(file, ec)) {
    VendorSpec undeclared;
    undeclared.vendor = vendor;
    undeclared.file = file;
    undeclared.declared = false;
    return undeclared;
  }
  Diagnostics diags;
  const auto config = load_config_file(file, diags);
  if (!config) throw ConfigError(diags.format(Severity::Error));
  return vendor_yaml::spec_from(*config, vendor, file);
}

}  // namespace xpuperf
