// GPT-2 pre-training (causal language modelling) on a token dataset made with GPT-2's BPE: the
// model is models/gpt.h (Hugging Face's GPT2LMHeadModel layout); the data, the step and the
// metrics (validation loss and perplexity) are train/causal_lm_case.h's.

#include "xpuperf/train/families/gpt_lm_case.h"

namespace xpuperf::cases {
namespace {

class Gpt2Case : public train::GptLmCase {
 public:
  Gpt2Case() : GptLmCase("gpt2", models::GptConfig::gpt2_small(), 1024) {}
};

XPUPERF_REGISTER_TRAINING_CASE("gpt2", "libtorch", Gpt2Case);

}  // namespace
}  // namespace xpuperf::cases
