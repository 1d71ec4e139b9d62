// CPM-1 (FlagPerf's cpm case: CPM-1 medium, a GPT-2-style Chinese model) pre-training as a causal
// language model on a token dataset made with a SentencePiece vocabulary (CPM's
// chinese_vocab.model, or one trained on the user's text): the model is models/gpt.h in CPM-1
// medium's shape, the data, the step and the metrics (validation loss and perplexity) are
// train/causal_lm_case.h's. init_checkpoint reads CPM's cpm_model_states_medium.pt (its Megatron
// names are converted).

#include "xpuperf/train/families/gpt_lm_case.h"

namespace xpuperf::cases {
namespace {

class CpmCase : public train::GptLmCase {
 public:
  CpmCase() : GptLmCase("sentencepiece", models::GptConfig::cpm1_medium(), 512) {}
};

XPUPERF_REGISTER_TRAINING_CASE("cpm", "libtorch", CpmCase);

}  // namespace
}  // namespace xpuperf::cases
