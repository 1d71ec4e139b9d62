// The declaration of the fused_kernels switch (fused_ops.h) (core/switch_spec.h), beside its strategy: torch-free, so
// that `xpuperf check`, `sweep` and `config --switches` know it without LibTorch.

#include "xpuperf/core/switch_spec.h"

namespace xpuperf::models {
namespace {

const bool fused_kernels_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "fused_kernels";
  s.type = SwitchType::Bool;
  s.default_value = "true";
  s.doc = "xpuperf's fused operators where the device's vendor brings kernels for them; false: ATen's operators";
  return s;
}());

}  // namespace
}  // namespace xpuperf::models
