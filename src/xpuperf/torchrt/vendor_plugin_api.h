#pragma once
// The interface a vendor's plug-in implements (docs/VENDORS.md): a shared library built against
// the same LibTorch as xpuperf-torch, loaded with dlopen when a run names the vendor, one vendor
// a process (PyTorch has one PrivateUse1 slot).
//
// The library exports one C symbol, xpuperf_vendor_plugin_v<N> (XPUPERF_VENDOR_PLUGIN below makes
// it), whose descriptor says which interface and LibTorch it was built for and gives the init
// xpuperf calls once. What the vendor brings is registered there:
//  - the device: PyTorch's own registrations (the allocator, c10::SetAllocator; the device guard,
//    C10_REGISTER_GUARD_IMPL; ATen's kernels, TORCH_LIBRARY_IMPL(aten, PrivateUse1, ...)), and
//    its name through Registrar::device;
//  - the collective backend, by name, through Registrar::collective_backend;
//  - base-case implementations (base/base_benchmark.h, register_base) and inference engines
//    (infer/engine.h): the same registries the built-in ones use, resolved against xpuperf-torch.

#include <torch/version.h>

#include <string>

#include "xpuperf/torchrt/collective_group.h"

// The interface's version: a plug-in built for another one is refused with what to do.
#define XPUPERF_VENDOR_API_VERSION 1

namespace xpuperf::torchrt {

class Registrar {
 public:
  virtual ~Registrar() = default;
  // The PrivateUse1 device's name ("npu", "sim"): `device: <name>` and "<name>:0" in the reports.
  virtual void device(const std::string& name) = 0;
  // A collective backend the vendor.yaml's collective_backend (or a config's dist_backend) may name.
  virtual void collective_backend(const std::string& name, CollectiveFactory factory) = 0;
};

}  // namespace xpuperf::torchrt

extern "C" {
struct XpuperfVendorPluginV1 {
  int api_version;            // XPUPERF_VENDOR_API_VERSION
  const char* name;           // the plug-in's name, for reports
  const char* version;        // its version, for reports
  const char* torch_version;  // the LibTorch it was built against (TORCH_VERSION)
  // Registers what the vendor brings; may throw (the message reaches the user and nothing runs).
  void (*init)(xpuperf::torchrt::Registrar& registrar);
};
}

#ifndef XPUPERF_PLUGIN_TORCH_VERSION
#define XPUPERF_PLUGIN_TORCH_VERSION TORCH_VERSION
#endif

// Exports the plug-in's entry point: XPUPERF_VENDOR_PLUGIN("sim", "1.0", init_sim).
#define XPUPERF_VENDOR_PLUGIN(NAME, VERSION, INIT)                                                                     \
  extern "C" __attribute__((visibility("default"))) const XpuperfVendorPluginV1* xpuperf_vendor_plugin_v1() {          \
    static const XpuperfVendorPluginV1 plugin{XPUPERF_VENDOR_API_VERSION, NAME, VERSION, XPUPERF_PLUGIN_TORCH_VERSION, \
                                              &INIT};                                                                  \
    return &plugin;                                                                                                    \
  }
