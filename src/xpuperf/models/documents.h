#pragma once
// Sequence packing for the causal decoders (GPT, Llama): a sample of consecutive tokens holds the end
// of one document and the start of the next; with `sequence_packing: true` each token attends only
// to the earlier tokens of its own document and its position counts from its document's first token
// (Megatron-LM's reset_attention_mask and reset_position_ids), so a sample trains as its documents
// would apart.

#include <torch/torch.h>

namespace xpuperf::models {

struct DocumentAttention {
  torch::Tensor positions;  // (batch, tokens) int64: from 0 at each document's first token
  torch::Tensor mask;       // (batch, 1, tokens, tokens) bool: true where a token may attend (causal, same document)
};

// From each token's document number (batch, tokens), non-decreasing along a row.
DocumentAttention document_attention(const torch::Tensor& documents);

}  // namespace xpuperf::models
