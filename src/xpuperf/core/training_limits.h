#pragma once
// The values each training parameter may take, checked when a config loads (`xpuperf check`,
// `train`, `sweep`), so that a value the runtime would refuse, or worse take (a negative
// learning rate), is named with its file and line before anything starts, with every other
// problem of the plan.

#include "xpuperf/core/config.h"
#include "xpuperf/core/diagnostics.h"

namespace xpuperf {

// Each parameter of `cfg` that has a rule here and a value outside it goes to `diags` at the
// line that set it. A value of the wrong type is left to the merge, which reports it.
void check_training_limits(const Config& cfg, Diagnostics& diags);

// A value of `key` that a vendor's device, collectives or JPEG decoder is known by in configs,
// accepted beside the neutral ones (device: auto, cpu; dist_backend: auto, gloo; jpeg_decoder:
// auto, cpu, device). Registered by the vendor's torch-free part, linked into every binary
// (NVIDIA's: vendors/nvidia/plugin/config_names.cpp). Returns true.
bool register_vendor_choice(const std::string& key, const std::string& value);

}  // namespace xpuperf
