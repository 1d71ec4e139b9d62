// The simulated accelerator's plug-in: xpuperf's second vendor, which proves the plug-in
// interface end to end on any machine (docs/VENDORS.md). Modelled on PyTorch's own reference for
// out-of-tree devices (torch_openreg): a PrivateUse1 device whose memory is host memory kept
// apart from the CPU's, ATen's operators through the CPU fallback, and collectives of its own.

#include "sim_collectives.h"
#include "sim_device.h"
#include "sim_engine.h"
#include "sim_jpeg.h"
#include "sim_memory.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/vendor_plugin_api.h"

namespace {

void init_sim(xpuperf::torchrt::Registrar& registrar) {
  xpuperf::sim::register_device();
  registrar.device("sim");
  registrar.collective_backend("sim", &xpuperf::sim::make_collectives);
  xpuperf::sim::register_base_cases();
  xpuperf::sim::register_engine();
  xpuperf::sim::register_jpeg_decoder();
  // The results' peak memory: the most the arena held at once (all sim devices of the process).
  xpuperf::torchrt::register_peak_memory_probe(c10::DeviceType::PrivateUse1, [](const torch::Device&) {
    return static_cast<double>(xpuperf::sim::memory_peak());
  });
}

}  // namespace

XPUPERF_VENDOR_PLUGIN("xpuperf-sim", "1.0", init_sim)
