#pragma once
// The names a vendor's device, collectives or JPEG decoder have in configs (device: cuda,
// dist_backend: nccl, ...), accepted beside the neutral values by the checks of those keys
// (train/training_limits_check.cpp). Registered by the vendor's torch-free part, linked into every
// binary (NVIDIA's: vendors/nvidia/plugin/config_names.cpp).

#include <set>
#include <string>

namespace xpuperf {

// Adds `value` to what `key` accepts. Returns true (for a static registrar).
bool register_vendor_choice(const std::string& key, const std::string& value);
// The values the vendors registered for `key`; empty when none did.
std::set<std::string> vendor_choices(const std::string& key);

}  // namespace xpuperf
