#include "xpuperf/models/paged_kv.h"

#include <algorithm>
#include <cmath>

#include "xpuperf/ops/operators.h"
#include "xpuperf/torchrt/compat.h"

namespace xpuperf::models {

PagedKvCache PagedKvCache::allocate(std::int64_t layers, std::int64_t blocks, std::int64_t block_size,
                                    std::int64_t kv_heads, std::int64_t head_dim, const torch::TensorOptions& options) {
  PagedKvCache c;
  for (std::int64_t i = 0; i < layers; ++i) {
    c.k.push_back(torch::zeros({blocks, block_size, kv_heads, head_dim}, options));
    c.v.push_back(torch::zeros({blocks, block_size, kv_heads, head_dim}, options));
  }
  return c;
}

double PagedKvCache::bytes_per_block(std::int64_t layers, std::int64_t block_size, std::int64_t kv_heads,
                                     std::int64_t head_dim, std::int64_t element_size) {
  return 2.0 * static_cast<double>(layers * block_size * kv_heads * head_dim * element_size);
}

double PagedKvCache::bytes() const {
  double total = 0;
  for (std::size_t i = 0; i < k.size(); ++i)
    total += static_cast<double>(k[i].numel() * k[i].element_size() + v[i].numel() * v[i].element_size());
  return total;
}

namespace {

// Keys or values of `rows` (any shape) from a layer's pool, as (rows..., kv_heads, head_dim).
torch::Tensor pool_rows(const torch::Tensor& pool, const torch::Tensor& rows) {
  const auto flat = pool.view({-1, pool.size(2), pool.size(3)});
  std::vector<std::int64_t> shape(rows.sizes().begin(), rows.sizes().end());
  shape.push_back(pool.size(2));
  shape.push_back(pool.size(3));
  return flat.index_select(0, rows.reshape({-1})).view(shape);
}

// (…, kv_heads, tokens, head_dim) with each key/value head repeated for its group of query heads.
torch::Tensor for_heads(const torch::Tensor& t, std::int64_t group) {
  return group > 1 ? t.repeat_interleave(group, -3) : t;
}

// Whole prompts of `count` tokens each, `n` of them side by side in the step's row from token
// `first`: their keys are the step's own, so one causal attention call for them all, as a batch.
void whole_prompts_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, std::int64_t group,
                             std::int64_t first, std::int64_t n, std::int64_t count, torch::Tensor& out) {
  // (1, heads, T, head_dim) → (n, heads, count, head_dim): a view (one dimension split in two).
  const auto batch = [&](const torch::Tensor& t) {
    return t.narrow(2, first, n * count).view({t.size(1), n, count, t.size(3)}).transpose(0, 1);
  };
  batch(out).copy_(
      compat::attention(batch(q), for_heads(batch(k), group), for_heads(batch(v), group), 0.0, false, true));
}

}  // namespace

torch::Tensor paged_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                              std::int64_t layer, const PagedBatch& batch) {
  torch::Tensor& k_pool = batch.cache->k[static_cast<std::size_t>(layer)];
  torch::Tensor& v_pool = batch.cache->v[static_cast<std::size_t>(layer)];
  const auto heads = q.size(1), kv_heads = k_pool.size(2);
  TORCH_CHECK(q.size(0) == 1, "paged attention: a step's tokens are one row, got ", q.size(0));
  TORCH_CHECK(heads % kv_heads == 0, "attention: ", heads, " query heads are not a multiple of ", kv_heads,
              " key/value heads");
  const auto group = heads / kv_heads;
  // The step's keys and values to their rows: (T, kv_heads, head_dim).
  k_pool.view({-1, kv_heads, k_pool.size(3)}).index_copy_(0, batch.cache_rows, k[0].transpose(0, 1));
  v_pool.view({-1, kv_heads, v_pool.size(3)}).index_copy_(0, batch.cache_rows, v[0].transpose(0, 1));
  if (batch.decode_all) {  // (1, heads, B, head_dim) as (B, heads, 1, head_dim) and back: views
    const auto y = ops::paged_decode_attention(q[0].transpose(0, 1).unsqueeze(2), k_pool, v_pool, batch.decode_table,
                                               batch.decode_positions, batch.decode_visible);
    return y.squeeze(2).transpose(0, 1).unsqueeze(0);
  }
  torch::Tensor out = torch::empty_like(q);
  if (batch.decode_tokens.defined()) {  // one token each, batched: (B, heads, 1, head_dim)
    const auto qd = q[0].index_select(1, batch.decode_tokens).transpose(0, 1).unsqueeze(2);
    const auto y = ops::paged_decode_attention(qd, k_pool, v_pool, batch.decode_table, batch.decode_positions,
                                               batch.decode_visible);
    out[0].index_copy_(1, batch.decode_tokens, y.squeeze(2).transpose(0, 1));
  }
  const auto& sequences = batch.sequences;
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    const auto& s = sequences[i];
    if (s.count == 1) continue;
    if (s.start == 0) {  // whole prompts, with the ones of its length right after it in the row
      std::size_t j = i + 1;
      while (j < sequences.size() && sequences[j].start == 0 && sequences[j].count == s.count &&
             sequences[j].first == sequences[j - 1].first + s.count)
        ++j;
      whole_prompts_attention(q, k, v, group, s.first, static_cast<std::int64_t>(j - i), s.count, out);
      i = j - 1;
      continue;
    }
    const auto length = s.context_rows.size(0);
    const auto keys = for_heads(pool_rows(k_pool, s.context_rows).transpose(0, 1).unsqueeze(0), group);
    const auto values = for_heads(pool_rows(v_pool, s.context_rows).transpose(0, 1).unsqueeze(0), group);
    // Token j of the chunk (position start + j) sees the keys at positions up to its own.
    const auto seen = torch::arange(length, s.context_rows.options()).view({1, length}) <=
                      (torch::arange(s.count, s.context_rows.options()) + s.start).view({s.count, 1});
    const auto y = compat::attention(q.narrow(2, s.first, s.count), keys, values, 0.0, false, false,
                                     seen.view({1, 1, s.count, length}));
    out.narrow(2, s.first, s.count).copy_(y);
  }
  return out;
}

}  // namespace xpuperf::models
