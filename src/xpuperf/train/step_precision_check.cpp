// The check of a switch whose strategy is step_precision.cpp: torch-free, so that `xpuperf check`
// and `xpuperf run` refuse a config that cannot run without loading LibTorch (core/training_switches.h).

#include <set>
#include <string>

#include "xpuperf/core/training_switches.h"

namespace xpuperf::train {
namespace {

// `precision`: one of the four this class runs.
void check_precision(const SwitchCheckInput& in, Diagnostics& diags) {
  if (!in.cfg.has("precision")) return;
  static const std::set<std::string> kPrecisions = {"fp32", "tf32", "bf16", "fp16"};
  const std::string p = in.get_string("precision", "");
  if (!kPrecisions.count(p))
    diags.error(in.source("precision"), "'precision' must be fp32, tf32, bf16 or fp16, got '" + p + "'",
                "fp32 keeps TF32 off; bf16 and fp16 are autocast (fp16 with a dynamic loss scaler)");
  // The run's own refusal (runtime.cpp), said at check time where the device is known to be the CPU.
  const bool on_cpu = in.get_string("device", "auto") == "cpu" || in.get_string("vendor", "") == "cpu";
  if (p == "fp16" && on_cpu && !XPUPERF_CPU_AUTOCAST_FP16)
    diags.error(in.source("precision"),
                "precision: fp16 needs a CUDA device with this LibTorch (1.13's CPU autocast has "
                "no fp16)",
                "use bf16 or fp32 on the CPU");
}

const bool precision_check_registered = register_switch_check("precision", check_precision);

}  // namespace
}  // namespace xpuperf::train
