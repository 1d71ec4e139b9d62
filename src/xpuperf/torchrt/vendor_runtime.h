#pragma once
// The vendor this process runs for: what its vendor.yaml declares and what its plug-in brought.
// Loaded once, before the first tensor, by the training, inference and base-case entries.

#include <stdexcept>
#include <string>
#include <vector>

#include "xpuperf/core/vendor_spec.h"

namespace xpuperf::torchrt {

// A plug-in that cannot be used: missing, built for another LibTorch or interface, failing its
// init, or a second vendor in one process. The message names the file and what to do.
class VendorError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ActiveVendor {
  VendorSpec spec;
  std::string plugin_name;  // empty: no plug-in
  std::string plugin_version;
  std::string plugin_path;  // the library loaded ("builtin" for one linked in)
  std::string device_name;  // what the device is called: cpu, cuda, or the plug-in's PrivateUse1 name
};

// Makes `spec` this process's vendor, loading its plug-in (dlopen) and calling its init. Calling it
// again with the same vendor returns the same one; another vendor is a VendorError (PyTorch has
// one PrivateUse1 slot a process). `library_dir`: where plug-ins named by library name are looked
// for (xpuperf-torch's folder when empty).
const ActiveVendor& activate_vendor(const VendorSpec& spec, const std::string& library_dir = "");
// The active vendor, or null before activate_vendor.
const ActiveVendor* active_vendor();

// A device's text as the user calls it: "sim:0" where LibTorch 1.13 says "privateuseone:0".
std::string device_text(const std::string& libtorch_text);

}  // namespace xpuperf::torchrt
