// The declaration of the activation_checkpointing switch (activation_checkpoint.h) (core/switch_spec.h), beside its
// strategy: torch-free, so that `xpuperf check`, `sweep` and `config --switches` know it without LibTorch.

#include "xpuperf/core/switch_spec.h"

namespace xpuperf::parallel {
namespace {

const bool checkpointing_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "activation_checkpointing";
  s.type = SwitchType::Bool;
  s.default_value = "false";
  s.doc = "recompute each block's activations in backward instead of keeping them (transformer models)";
  s.sweep_token = "ckpt";
  s.in_submit_info = true;
  s.in_finished = true;
  return s;
}());

}  // namespace
}  // namespace xpuperf::parallel
