// The check of a switch whose strategy is step_precision.cpp: torch-free, so that `xpuperf check`
// and `xpuperf run` refuse a config that cannot run without loading LibTorch (core/training_switches.h).

#include <set>
#include <string>

#include "xpuperf/core/switch_spec.h"
#include "xpuperf/core/training_switches.h"

namespace xpuperf::train {
namespace {

// `precision` (its values: the declaration below) where the device cannot run it.
void check_precision(const SwitchCheckInput& in, Diagnostics& diags) {
  if (!in.cfg.has("precision")) return;
  const std::string p = in.get_string("precision", "");
  // The run's own refusal (runtime.cpp), said at check time where the device is known to be the CPU.
  const bool on_cpu = in.get_string("device", "auto") == "cpu" || in.get_string("vendor", "") == "cpu";
  if (p == "fp16" && on_cpu && !XPUPERF_CPU_AUTOCAST_FP16)
    diags.error(in.source("precision"),
                "precision: fp16 needs a CUDA device with this LibTorch (1.13's CPU autocast has "
                "no fp16)",
                "use bf16 or fp32 on the CPU");
}

const bool precision_check_registered = register_switch_check("precision", check_precision);

const bool precision_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "precision";
  s.type = SwitchType::Choice;
  s.default_value = "fp32";
  s.choices = {"fp32", "tf32", "bf16", "fp16"};
  s.doc = "the compute type: fp32 (TF32 off), tf32, bf16 autocast, or fp16 autocast with a dynamic loss scaler";
  s.sweep_values = {"fp32", "tf32", "bf16", "fp16"};
  s.on_value = "bf16";
  s.in_submit_info = true;
  s.in_finished = true;
  return s;
}());

}  // namespace
}  // namespace xpuperf::train
