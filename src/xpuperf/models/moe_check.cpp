// The check of a mixture-of-experts model's settings (llama.cpp's LlamaConfig, Mixtral's case):
// torch-free, so that `xpuperf check` and `xpuperf run` list every bad value of a plan before any
// rank starts, with the same rule the model applies when it is built (core/training_switches.h).

#include <cmath>
#include <string>

#include "xpuperf/core/switch_spec.h"
#include "xpuperf/core/training_switches.h"

namespace xpuperf::models {
namespace {

void check_experts(const SwitchCheckInput& in, Diagnostics& diags) {
  if (!in.cfg.has("num_local_experts")) return;
  const std::int64_t experts = in.get_int("num_local_experts", 0);
  if (experts == 1 || experts < 0)
    diags.error(in.source("num_local_experts"),
                "'num_local_experts' must be 0 (a dense model) or 2 or more, got " + std::to_string(experts),
                "Mixtral-8x7B has 8");
  const std::int64_t top_k = in.get_int("num_experts_per_tok", 2);
  if (experts >= 2 && (top_k < 1 || top_k > experts))
    diags.error(in.source("num_experts_per_tok"),
                "'num_experts_per_tok' must be 1 to the " + std::to_string(experts) +
                    " experts (num_local_experts), got " + std::to_string(top_k),
                "Mixtral routes each token to 2");
  const double capacity = in.get_number("moe_capacity_factor", 0);
  if (std::isfinite(capacity) && capacity < 0)  // not finite: check_training_limits says so
    diags.error(
        in.source("moe_capacity_factor"),
        "'moe_capacity_factor' must be 0 (no cap: every routed token is kept) or more, got " + std::to_string(capacity),
        "1.25 keeps up to 1.25 times an even share of tokens an expert");
  if (in.get_int("decoder_sparse_step", 1) < 1)
    diags.error(in.source("decoder_sparse_step"), "'decoder_sparse_step' must be 1 or more",
                "1: every block has experts; 2: every second one");
}

// `tokenizer` names what made a language case's token files (LlamaLmCase::datasets).
void check_tokenizer(const SwitchCheckInput& in, Diagnostics& diags) {
  if (!in.cfg.has("tokenizer")) return;
  const std::string tokenizer = in.get_string("tokenizer", "llama3");
  if (tokenizer != "llama3" && tokenizer != "sentencepiece")
    diags.error(in.source("tokenizer"), "'tokenizer' must be llama3 or sentencepiece, got '" + tokenizer + "'",
                "llama3: Llama 3's ids; sentencepiece: a SentencePiece model's, as Llama 2's and Mixtral's "
                "tokenizer.model");
}

const bool experts_check_registered = register_switch_check("experts", check_experts);
const bool tokenizer_check_registered = register_switch_check("tokenizer", check_tokenizer);

const bool experts_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "num_local_experts";
  s.type = SwitchType::Int;
  s.default_value = "0";
  s.min = 0;
  s.unit = "experts";
  s.doc = "a mixture of experts in the model's MLPs (Mixtral's shape; 0: dense; 1 is refused)";
  s.sweep_token = "moe";
  s.sweep_min = 2;
  s.not_yet_with = {"tensor_parallel"};
  s.on_value = "4";
  return s;
}());

}  // namespace
}  // namespace xpuperf::models
