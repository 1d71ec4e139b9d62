#include "xpuperf/models/kv_cache.h"

#include <cmath>

#include "xpuperf/models/fused_ops.h"
#include "xpuperf/models/paged_kv.h"
#include "xpuperf/ops/composite.h"
#include "xpuperf/torchrt/compat.h"

namespace xpuperf::models {

KvCache KvCache::allocate(std::int64_t layers, std::int64_t slots, std::int64_t max_tokens, std::int64_t kv_heads,
                          std::int64_t head_dim, const torch::TensorOptions& options) {
  KvCache c;
  for (std::int64_t i = 0; i < layers; ++i) {
    c.k.push_back(torch::zeros({slots, max_tokens, kv_heads, head_dim}, options));
    c.v.push_back(torch::zeros({slots, max_tokens, kv_heads, head_dim}, options));
  }
  return c;
}

double KvCache::bytes() const {
  double total = 0;
  for (std::size_t i = 0; i < k.size(); ++i)
    total += static_cast<double>(k[i].numel() * k[i].element_size() + v[i].numel() * v[i].element_size());
  return total;
}

KvStep KvStep::prefill(KvCache& cache, const torch::Tensor& slots, std::int64_t tokens) {
  KvStep s;
  s.cache = &cache;
  s.slots = slots;
  s.positions = torch::arange(tokens, slots.options()).expand({slots.size(0), tokens});
  s.fresh = true;
  return s;
}

KvStep KvStep::decode(KvCache& cache, const torch::Tensor& positions, std::int64_t visible) {
  TORCH_CHECK(visible > 0 && visible <= cache.max_tokens(), "KV cache: ", visible, " visible positions, the cache has ",
              cache.max_tokens());
  const auto batch = positions.size(0);
  TORCH_CHECK(batch <= cache.slots(), "KV cache: a decode batch of ", batch, " rows, the cache has ", cache.slots(),
              " slots");
  KvStep s;
  s.cache = &cache;
  s.slots = torch::arange(batch, positions.options());
  s.positions = positions;
  s.visible = visible;
  return s;
}

KvStep KvStep::paged_step(const PagedBatch& batch, const torch::Tensor& positions) {
  KvStep s;
  s.paged = &batch;
  s.positions = positions;
  return s;
}

const torch::Tensor& KvStep::additive_mask() const {
  if (!bias_.defined() && !fresh && visible > 0)
    bias_ = ops::composite::decode_mask(positions, visible, cache->k[0].options());
  return bias_;
}

torch::Tensor decoder_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                std::int64_t layer, const KvStep* step, bool cached, const torch::Tensor& mask,
                                bool use_kernels) {
  if (step && step->paged) {
    TORCH_CHECK(!cached, "attention: a paged step's keys are written by its attention");
    return paged_attention(q, k, v, layer, *step->paged);
  }
  const auto batch = q.size(0), heads = q.size(1), tokens = q.size(2);
  const auto kv_heads = step ? step->cache->k[static_cast<std::size_t>(layer)].size(2) : k.size(1);
  TORCH_CHECK(heads % kv_heads == 0, "attention: ", heads, " query heads are not a multiple of ", kv_heads,
              " key/value heads");
  const auto group = heads / kv_heads;
  if (step && !cached) {  // the new tokens' keys and values into their slots, at their positions
    const auto rows = step->slots.view({batch, 1}).expand({batch, tokens});
    step->cache->k[static_cast<std::size_t>(layer)].index_put_({rows, step->positions}, k.transpose(1, 2));
    step->cache->v[static_cast<std::size_t>(layer)].index_put_({rows, step->positions}, v.transpose(1, 2));
  }
  if (!step || step->fresh) {
    const auto keys = group > 1 ? k.repeat_interleave(group, 1) : k;
    const auto values = group > 1 ? v.repeat_interleave(group, 1) : v;
    TORCH_CHECK(!mask.defined() || !step, "attention: a mask is for a forward without a KV cache");
    return compat::attention(q, keys, values, 0.0, false, /*causal=*/!mask.defined(), mask);
  }
  if (use_kernels)
    if (auto out = fused::decode_attention(q, *step, layer)) return *out;
  return ops::composite::decode_attention_masked(q, step->cache->k[static_cast<std::size_t>(layer)],
                                                 step->cache->v[static_cast<std::size_t>(layer)], step->additive_mask(),
                                                 step->visible);
}

}  // namespace xpuperf::models
