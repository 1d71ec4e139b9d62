// The check of the offload_optimizer switch (offload_optimizer.h): torch-free, so that `xpuperf
// check` and `xpuperf run` refuse a config that cannot run without loading LibTorch
// (core/training_switches.h).

#include <string>

#include "xpuperf/core/switch_spec.h"
#include "xpuperf/core/training_switches.h"

namespace xpuperf::optim {
namespace {

void check_offload(const SwitchCheckInput& in, Diagnostics& diags) {
  if (in.get_bool("offload_overlap", false) && !in.get_bool("offload_optimizer", false))
    diags.error(in.source("offload_overlap"),
                "offload_overlap: overlaps the host's optimizer step, which only offload_optimizer: true runs there; "
                "set offload_optimizer: true or offload_overlap: false");
  if (!in.get_bool("offload_optimizer", false)) return;
  const auto where = in.source("offload_optimizer");
  const std::string optimizer = in.get_string("optimizer", "sgd");
  if (optimizer != "adam" && optimizer != "adamw")
    diags.error(where, "offload_optimizer: keeps Adam's moments on the host; optimizer " + optimizer +
                           " has none to offload (use adam or adamw, or offload_optimizer: false)");
  if (in.get_int("zero_stage", 0) > 0)
    diags.error(where,
                "offload_optimizer: not yet with zero_stage (each rank would offload its shares); set "
                "zero_stage: 0");
  const std::string fused = in.get_string("fused_optimizer", "off");
  if (fused != "off" && fused != "false")
    diags.error(where, "offload_optimizer: the host runs the step, so fused_optimizer: " + fused +
                           " cannot; set fused_optimizer: off");
}

const bool offload_check_registered = register_switch_check("offload_optimizer", check_offload);

const bool offload_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "offload_optimizer";
  s.type = SwitchType::Bool;
  s.default_value = "false";
  s.doc = "ZeRO-Offload: fp32 master weights and Adam's moments in host memory, the update on the host's cores";
  s.sweep_token = "offload";
  s.not_yet_with = {"zero_stage", "fused_optimizer"};
  s.in_submit_info = true;
  s.in_finished = true;
  return s;
}());

const bool offload_overlap_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "offload_overlap";
  s.type = SwitchType::Bool;
  s.default_value = "false";
  s.doc = "with offload_optimizer: the host's update beside the next step, its weights one step late";
  s.in_submit_info = true;
  return s;
}());

}  // namespace
}  // namespace xpuperf::optim
