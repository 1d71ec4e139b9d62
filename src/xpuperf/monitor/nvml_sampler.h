#pragma once
// NVIDIA GPUs through NVML, loaded at run time with dlopen("libnvidia-ml.so.1"): one binary runs
// with or without a GPU driver, and the build needs no NVML headers.

#include <memory>

#include "xpuperf/monitor/sampler.h"

namespace xpuperf::monitor {

// Per GPU ("gpu<i>"): util_percent, mem_util_percent, mem_used_bytes, mem_total_bytes, power_w,
// energy_j (the hardware counter, since the monitor started), temperature_c, sm_clock_mhz,
// mem_clock_mhz, throttle_reasons (NVML's bit mask). Metrics a GPU does not support are left out.
// Nothing when NVML cannot be loaded or initialised.
std::unique_ptr<Sampler> make_nvml_sampler();

}  // namespace xpuperf::monitor
