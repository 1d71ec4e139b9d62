#pragma once
// A vendor's datasheet figures: chips.<hardware> of vendors/<vendor>/specs.yaml (peak_tflops per
// precision, memory_gib, memory_bandwidth_gbps, interconnect, host_link_gbps, tdp_w).

#include <yaml-cpp/yaml.h>

#include <string>

#include "xpuperf/core/repo.h"

namespace xpuperf {

// The chip's map, or a null node when the vendor has no specs.yaml or does not list the chip.
YAML::Node chip_specs(const Repo& repo, const std::string& vendor, const std::string& hardware);

// A figure under the chip by dotted path ("peak_tflops.bf16"); 0 when it is absent, not a number
// or not positive.
double chip_figure(const YAML::Node& chip, const std::string& path);

}  // namespace xpuperf
