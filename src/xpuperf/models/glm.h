#pragma once
// GLM (Du et al., "GLM: General Language Model Pretraining with Autoregressive Blank Infilling"),
// the model of FlagPerf's glm case. Its layout is Megatron-LM's GPT-2 (pre-norm blocks, tanh GELU,
// the output layer tied to the token embedding) with a second table of positions (a token's place
// within its blank) and its own attention mask: part A (the text with blanks) attends both ways
// within itself, part B (the blanks' contents) sees part A and its own earlier tokens. So it is
// models/gpt.h's decoder with GptConfig::block_positions. GLM-large: 24 layers of 1,024, 16
// heads, sequences of 512 (both position tables have 513 rows, as GLM's), a 30,592-id vocabulary
// (bert-large-uncased's WordPiece, GLM's [sop] 30522 and [eop] 30523, padded to a multiple of
// 128): 334,688,256 parameters.

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>

#include "xpuperf/core/config.h"
#include "xpuperf/models/gpt.h"

namespace xpuperf::models {

struct GlmConfig {
  std::int64_t vocab = 30592, positions = 512, layers = 24, hidden = 1024,
               heads = 16;  // positions: the longest sequence
  double dropout = 0.1;     // GLM's hidden and attention dropout
  static GlmConfig glm_large() { return {}; }
  GptConfig decoder() const;
};

// `base` with the sizes a config sets, in GLM's argument names (vocab_size,
// max_position_embeddings, num_layers, hidden_size, num_attention_heads) and `dropout`; ConfigError
// naming them when they do not fit.
GlmConfig glm_config_from(const Config& cfg, GlmConfig base);

// (batch, 1, tokens, tokens), true where query i may attend to key j: j < sep (part A) or j ≤ i.
torch::Tensor glm_attention_mask(const torch::Tensor& sep, std::int64_t tokens);

// GLM's own checkpoint names (word_embeddings, transformer.position_embeddings,
// transformer.block_position_embeddings, transformer.layers.<i>.…, transformer.final_layernorm,
// linears stored (out, in)), as blocklm-large-blank's mp_rank_00_model_states.pt holds them under
// "module", renamed to this model's in place. Returns whether they were that layout.
bool convert_glm_names(std::map<std::string, torch::Tensor>& tensors);

// One batch of GLM inputs, each (batch, tokens) but sep (batch): targets −100 where there is no
// loss; `targets_from`: no target lies before this position in any row, so the output layer runs
// on the positions from it on only.
struct GlmInputs {
  torch::Tensor ids, targets, positions, block_positions, sep;
  std::int64_t targets_from = 0;
};

struct GlmModelImpl : torch::nn::Module {
  explicit GlmModelImpl(const GlmConfig& c = GlmConfig::glm_large());
  // Logits (batch, tokens − targets_from, vocab).
  torch::Tensor forward(const GlmInputs& in);
  // The mean cross entropy of the targets (what pre-training trains on).
  torch::Tensor loss(const GlmInputs& in);
  // The log-probability of each row's targets, summed over the row (batch): how likely the model
  // finds the blank filled with them (a candidate's score in ReCoRD).
  torch::Tensor target_log_probs(const GlmInputs& in);
  // The residual adds with the layer norms after them through the add + LayerNorm kernels, and the
  // loss through the cross-entropy kernels, where they apply (fused_ops.h).
  bool fused_kernels = false;
  // Training FLOPs a token at `tokens` positions, without the output layer (6 × the parameters a
  // token uses, + the attention products, 12 × layers × hidden × tokens), and of the output layer
  // at a position where it runs.
  double training_flops_per_token(std::int64_t tokens) const;
  double output_flops_per_position() const { return 6.0 * static_cast<double>(config.vocab * config.hidden); }

  GlmConfig config;
  GptModel transformer{nullptr};

 private:
  torch::Tensor hidden(const GlmInputs& in);
};
TORCH_MODULE(GlmModel);

}  // namespace xpuperf::models
