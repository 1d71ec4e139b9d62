#pragma once
// The interface of a vendor's monitor library (vendor.yaml: monitor: library, monitor_library:
// <name>): a small shared library, without LibTorch, that the node agent loads with dlopen to
// sample the vendor's devices beside the host's samplers. It exports one C symbol,
// xpuperf_monitor_sampler_v1 (XPUPERF_MONITOR_SAMPLER makes it); `sample` writes the figures now
// as lines "device,metric,value" (sim0,mem_used_bytes,1048576) into `text` and returns the bytes
// written. It is called from the monitor's thread once a period; a rate is over the time since
// its last call.

#include <cstddef>

#define XPUPERF_MONITOR_API_VERSION 1

extern "C" {
struct XpuperfMonitorSamplerV1 {
  int api_version;  // XPUPERF_MONITOR_API_VERSION
  const char* name;
  std::size_t (*sample)(char* text, std::size_t capacity);
};
}

#define XPUPERF_MONITOR_SAMPLER(NAME, SAMPLE)                                                                     \
  extern "C" __attribute__((visibility("default"))) const XpuperfMonitorSamplerV1* xpuperf_monitor_sampler_v1() { \
    static const XpuperfMonitorSamplerV1 sampler{XPUPERF_MONITOR_API_VERSION, NAME, &SAMPLE};                     \
    return &sampler;                                                                                              \
  }
