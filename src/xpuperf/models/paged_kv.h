#pragma once
// The paged KV cache of the serving engine (vLLM's PagedAttention): a layer's keys and values in
// one pool of blocks of `block_size` tokens, a sequence's tokens in the blocks its block table lists
// (core/serving_scheduler.h hands them out). A step's tokens, of many sequences, prefill chunks
// and decodes together, run as one row (1, T): each token writes its key and value to its cache
// row (block × block_size + its offset in the block) and attends over its own sequence's rows up
// to its position.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace xpuperf::models {

struct PagedKvCache {
  std::vector<torch::Tensor> k, v;  // a layer each: (blocks, block_size, kv_heads, head_dim)

  static PagedKvCache allocate(std::int64_t layers, std::int64_t blocks, std::int64_t block_size, std::int64_t kv_heads,
                               std::int64_t head_dim, const torch::TensorOptions& options);
  // The bytes of one block over every layer, keys and values: what sizes the pool from memory.
  static double bytes_per_block(std::int64_t layers, std::int64_t block_size, std::int64_t kv_heads,
                                std::int64_t head_dim, std::int64_t element_size);
  std::int64_t blocks() const { return k.empty() ? 0 : k[0].size(0); }
  std::int64_t block_size() const { return k.empty() ? 0 : k[0].size(1); }
  double bytes() const;
};

// One step's tokens, flattened into one row.
struct PagedBatch {
  PagedKvCache* cache = nullptr;
  torch::Tensor cache_rows;  // (T) int64: where each token's key and value go
  struct Sequence {
    std::int64_t first = 0, count = 0;  // its tokens in the step's row
    std::int64_t start = 0;             // the position of its first one
    torch::Tensor context_rows;         // a prefill chunk's (start + count) int64: its keys' cache rows
  };
  std::vector<Sequence> sequences;
  // The decoding sequences (count 1), batched for ops::paged_decode_attention: their tokens in the
  // step's row, their block tables (B, the most blocks; padded with block 0), their positions
  // (B, 1) and the most keys a row sees; undefined when none decodes.
  torch::Tensor decode_tokens, decode_table, decode_positions;
  std::int64_t decode_visible = 0;
  // Every token of the step decodes, in order: the queries need no gather and the outputs no
  // scatter (decode_tokens is not read, and may be undefined).
  bool decode_all = false;
};

// Attention of one layer over the paged cache: q (1, heads, T, head_dim), k and v (1, kv_heads, T,
// head_dim) of the step's tokens, after the positional encoding. Writes k and v to their rows.
torch::Tensor paged_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                              std::int64_t layer, const PagedBatch& batch);

}  // namespace xpuperf::models
