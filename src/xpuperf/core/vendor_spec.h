#pragma once
// What a vendor declares about its chip in vendors/<vendor>/vendor.yaml: the device it runs on,
// how devices are made visible, the collective backend, the monitor and the plug-in that brings
// what LibTorch does not have (docs/VENDORS.md). Read without LibTorch, so that `check` and the
// launcher know it too.

#include <string>
#include <vector>

#include "xpuperf/core/repo.h"

namespace xpuperf {

struct VendorSpec {
  std::string vendor;  // the folder's name
  std::string file;    // vendors/<vendor>/vendor.yaml, for messages
  // cpu, cuda, or privateuse1: PyTorch's slot for a device built out of its tree (torch_npu,
  // torch_mlu, torch_musa and our simulated one are such devices).
  std::string device_type = "cpu";
  // What the device is called ("sim" gives sim:0); cpu and cuda are called by their type.
  std::string device_name = "cpu";
  std::string visible_devices_env;                    // CUDA_VISIBLE_DEVICES, ASCEND_RT_VISIBLE_DEVICES, ...
  std::vector<std::string> container_device_options;  // options a container needs to see the devices
  std::string collective_backend = "gloo";            // gloo, nccl, or one the plug-in registers
  // host, nvml (NVIDIA's monitor library, vendors/nvidia/plugin/monitor), command
  // (vendors/<v>/monitor.yaml's tool), library (monitor_library's sampler)
  std::string monitor = "host";
  // monitor: library: the vendor's monitor library (monitor/sampler_plugin.h), lib<name>.so beside
  // xpuperf or a path to a .so relative to the vendor's folder.
  std::string monitor_library;
  // The plug-in library: empty for none, "builtin" for one linked into xpuperf-torch (nvidia), else
  // a library name (lib<name>.so beside xpuperf-torch) or a path to a .so, relative to the vendor's folder.
  std::string plugin;

  // False for a vendor folder with configs only (no vendor.yaml): it runs on the device its configs'
  // `device` key names, with LibTorch's collectives and the host monitor, as before vendor.yaml.
  bool declared = true;

  bool has_plugin() const { return !plugin.empty(); }
  bool is_builtin_plugin() const { return plugin == "builtin"; }
};

// Reads vendors/<vendor>/vendor.yaml (undeclared defaults when the folder has none). ConfigError,
// naming the file and the key, when the folder is missing or a key is unknown, absent where
// needed or not one of its values.
VendorSpec load_vendor_spec(const Repo& repo, const std::string& vendor);
// The same from text (tests): `file` names it in messages.
VendorSpec parse_vendor_spec(const std::string& text, const std::string& vendor, const std::string& file);

// Finds a library vendor.yaml names (`plugin`, `monitor_library`): a path (with '/' or ending in
// .so) is relative to the vendor's folder; a bare name is lib<name>.so in `binary_dir` (this
// program's folder when empty), then in the vendor's folder. The first that exists, or "" with
// `looked_for` listing where it looked.
std::string find_vendor_library(const VendorSpec& spec, const std::string& name, std::string& looked_for,
                                const std::string& binary_dir = "");

// The device types a vendor.yaml may name.
const std::vector<std::string>& known_device_types();
// The collective backends LibTorch brings; a plug-in may register others.
const std::vector<std::string>& builtin_collective_backends();

}  // namespace xpuperf
