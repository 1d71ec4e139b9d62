// The declaration of the sequence_packing switch (documents.h) (core/switch_spec.h), beside its strategy: torch-free,
// so that `xpuperf check`, `sweep` and `config --switches` know it without LibTorch.

#include "xpuperf/core/switch_spec.h"

namespace xpuperf::models {
namespace {

const bool packing_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "sequence_packing";
  s.type = SwitchType::Bool;
  s.default_value = "false";
  s.doc =
      "each token attends only to its own document's earlier tokens, its position counted from the document's start "
      "(language cases)";
  s.sweep_token = "pack";
  return s;
}());

}  // namespace
}  // namespace xpuperf::models
