// Mixtral pre-training (causal language modelling, FlagPerf's mixtral_8x7B at a size one GPU holds):
// the Llama model with Mixtral's sparse MoE block in every layer (models/llama.h, models/moe.h);
// _base.yaml's reduced shape by default, Mixtral-8x7B's as --set lines (README). The case is
// train/llama_lm_case.h.

#include "xpuperf/train/families/llama_lm_case.h"

namespace xpuperf::cases {
namespace {

class MixtralCase : public train::LlamaLmCase {
 public:
  MixtralCase() : LlamaLmCase(models::LlamaConfig::mixtral_8x7b()) {}
};

XPUPERF_REGISTER_TRAINING_CASE("mixtral", "libtorch", MixtralCase);

}  // namespace
}  // namespace xpuperf::cases
