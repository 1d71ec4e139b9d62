#pragma once
// The output layer of the language models (GPT's tied head, BERT's tied decoder) and the loss
// over its logits, shared so both get the same GPU treatment.

#include <torch/torch.h>

namespace xpuperf::models {

// Logits over the vocabulary: hidden (..., width) × weight (vocab, width)ᵀ + bias (vocab;
// undefined: none). `aligned`: the vocabulary padded to a multiple of 64 with zero rows whose
// logits are −inf, so the softmax, the loss and an argmax are unchanged; for the GPU, where
// 50,257 or 30,522 logits a row leave every GEMM of the layer on Tensor Cores' unaligned kernels
// (three times slower: cases/training/gpt2/README.md). The result then has the padded width.
torch::Tensor vocabulary_logits(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& bias,
                                bool aligned);

// The mean cross entropy of rows of logits (rows, vocab) against `targets` (rows; −100 ignored).
// `use_kernels`: the cross-entropy kernels where they apply (fused_ops.h: the logits read in their own
// type, no fp32 copy); else fp32 log-probabilities straight from bf16 logits in one kernel (no
// fp32 copy of the logits first, which cross_entropy under autocast makes). The kernels' backward
// writes the gradient over the logits: pass logits made for this loss, which nothing reads after it.
torch::Tensor token_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, bool use_kernels = false);

}  // namespace xpuperf::models
