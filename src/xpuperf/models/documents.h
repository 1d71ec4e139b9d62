#pragma once
// Sequence packing: a row holds several documents (the causal decoders' samples of consecutive
// tokens, GPT's and Llama's; BERT's packed samples); with `sequence_packing: true` each token
// attends only to its own document's tokens (the earlier ones, in a causal decoder) and its position
// counts from its document's first token (Megatron-LM's reset_attention_mask and
// reset_position_ids), so a row trains as its documents would apart.

#include <torch/torch.h>

namespace xpuperf::models {

struct DocumentAttention {
  torch::Tensor positions;  // (batch, tokens) int64: from 0 at each document's first token
  torch::Tensor mask;       // (batch, 1, tokens, tokens) bool: true where a token may attend (same document)
};

// From each token's document number (batch, tokens): a token whose number differs from the one
// before it starts a document. `causal`: a token sees its document's earlier tokens only.
DocumentAttention document_attention(const torch::Tensor& documents, bool causal = true);

}  // namespace xpuperf::models
