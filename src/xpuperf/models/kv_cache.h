#pragma once
// The key/value cache of the decoder models (GPT, Llama) for generation: preallocated and
// contiguous, one row ("slot") a sequence, so a batch of sequences in slots 0..n-1 reads its keys
// as a view, with no gather and no copy. A forward given a KvStep writes its tokens' keys and
// values into their slots and attends over what the slots hold.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace xpuperf::models {

struct KvCache {
  std::vector<torch::Tensor> k, v;  // a layer each: (slots, max_tokens, kv_heads, head_dim)

  static KvCache allocate(std::int64_t layers, std::int64_t slots, std::int64_t max_tokens, std::int64_t kv_heads,
                          std::int64_t head_dim, const torch::TensorOptions& options);
  std::int64_t slots() const { return k.empty() ? 0 : k[0].size(0); }
  std::int64_t max_tokens() const { return k.empty() ? 0 : k[0].size(1); }
  double bytes() const;
};

// Where one forward's tokens (ids: batch × tokens) go and what they see.
struct PagedBatch;  // paged_kv.h

struct KvStep {
  KvCache* cache = nullptr;
  // A paged engine's step instead (then `cache` is null): its tokens flattened into one row, each
  // at its position in its own sequence.
  const PagedBatch* paged = nullptr;
  // Where given, the rows of the step's tokens (in its flattened row) whose logits are wanted: the
  // model's output layer runs on those alone.
  torch::Tensor logit_rows;
  torch::Tensor slots;      // (batch) int64: the slot of each row
  torch::Tensor positions;  // (batch, tokens) int64: each token's position in its sequence
  // Prefill: the tokens are a sequence's first (positions 0..tokens-1 in every row), so they attend
  // causally to one another (flash attention) and only write the cache.
  bool fresh = false;
  // Decode: rows are slots 0..batch-1 and every key at a position up to a token's own is read, of
  // the first `visible` positions (a bucket ≥ the longest row, so that CUDA graphs replay per bucket).
  std::int64_t visible = 0;
  // (batch, 1, tokens, visible): 0 where a key is at or before the token's position, −inf after,
  // in the cache's type; added to the scores of every layer by ATen's attention. Made when a layer
  // first asks for it: the decoding kernel (fused::decode_attention) reads the positions instead, and
  // a step that runs only it makes no mask (four kernels a step fewer).
  const torch::Tensor& additive_mask() const;

  static KvStep prefill(KvCache& cache, const torch::Tensor& slots, std::int64_t tokens);
  // positions: (batch, 1), the position of each row's new token.
  static KvStep decode(KvCache& cache, const torch::Tensor& positions, std::int64_t visible);
  // positions: (1, T), each token's position in its sequence.
  static KvStep paged_step(const PagedBatch& batch, const torch::Tensor& positions);

 private:
  mutable torch::Tensor bias_;  // additive_mask(), once made
};

// Attention of one layer: q (batch, heads, tokens, head_dim), k and v (batch, kv_heads, tokens,
// head_dim) of the new tokens, after the positional encoding. Without a step: causal over the
// tokens themselves. Grouped-query attention (heads a multiple of kv_heads) reads each key/value
// head once for its group of query heads. `cached`: the step's keys and values are in the cache
// already (written by a fused kernel); a decoding step then needs no k and v. `mask` (without a
// step; (batch, 1, tokens, tokens) bool, true where a token may attend): instead of causal.
// `use_kernels`: a decoding step's attention is fused::decode_attention's kernel where it applies.
torch::Tensor decoder_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                std::int64_t layer, const KvStep* step, bool cached = false,
                                const torch::Tensor& mask = {}, bool use_kernels = false);

// A decoder model that generates with a KvCache.
class CausalDecoder {
 public:
  virtual ~CausalDecoder() = default;
  // Logits (batch, tokens, vocab) of the last `keep_last` positions (0: all), with the cache when
  // `step` is given.
  virtual torch::Tensor decoder_logits(const torch::Tensor& ids, const KvStep* step, std::int64_t keep_last) = 0;
  virtual std::int64_t decoder_layers() const = 0;
  virtual std::int64_t kv_heads() const = 0;
  virtual std::int64_t head_dim() const = 0;
  virtual std::int64_t max_positions() const = 0;  // 0: no limit (rotary positions)
  virtual std::int64_t vocab_size() const = 0;
  // Inference-only changes that keep the results (e.g. one GEMM for several projections), made
  // after the weights are loaded and placed; cheap to call again (a no-op while they hold).
  virtual void fuse_for_inference() {}
  // Whether the model's fused CUDA kernels run where they apply (a model without any ignores it).
  virtual void use_fused_kernels(bool) {}
};

}  // namespace xpuperf::models
