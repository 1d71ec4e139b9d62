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
}

const bool precision_check_registered = register_switch_check("precision", check_precision);

}  // namespace
}  // namespace xpuperf::train
