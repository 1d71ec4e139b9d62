// Llama pre-training (causal language modelling) on a token dataset made with Llama 3's tokeniser:
// the model is models/llama.h (Hugging Face's LlamaForCausalLM layout, shared with the llm inference
// case) in Meta's Llama-3.2-1B shape by default; the case is train/llama_lm_case.h.

#include "xpuperf/train/families/llama_lm_case.h"

namespace xpuperf::cases {
namespace {

class LlamaCase : public train::LlamaLmCase {
 public:
  LlamaCase() : LlamaLmCase(models::LlamaConfig::llama3_2_1b()) {}
};

XPUPERF_REGISTER_TRAINING_CASE("llama", "libtorch", LlamaCase);

}  // namespace
}  // namespace xpuperf::cases
