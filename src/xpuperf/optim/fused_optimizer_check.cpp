// The declaration of the fused_optimizer switch (optimizers.h) (core/switch_spec.h), beside its strategy: torch-free,
// so that `xpuperf check`, `sweep` and `config --switches` know it without LibTorch.

#include "xpuperf/core/switch_spec.h"

namespace xpuperf::optim {
namespace {

const bool fused_optimizer_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "fused_optimizer";
  s.type = SwitchType::Choice;
  s.default_value = "off";
  s.choices = {"off", "foreach", "fused", "false", "true"};
  s.doc =
      "the optimizer's step: off (LibTorch's, also false), foreach (multi-tensor), fused (one kernel a group, LibTorch "
      "2.x on CUDA; also true)";
  s.sweep_values = {"foreach", "fused"};
  s.on_value = "foreach";
  return s;
}());

}  // namespace
}  // namespace xpuperf::optim
