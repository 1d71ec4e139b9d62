#include "xpuperf/data/shard_sampler.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace xpuperf::data {

std::int64_t padded_shard_size(std::int64_t dataset_size, int world_size) {
  return (dataset_size + world_size - 1) / world_size;
}

std::vector<std::int64_t> shard_indices(const ShardSpec& spec, std::int64_t epoch) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(spec.dataset_size));
  std::iota(all.begin(), all.end(), 0);
  if (spec.shuffle) {
    // mt19937_64 and our own Fisher-Yates: std::shuffle's algorithm differs between standard
    // libraries, and every rank (maybe built differently) must agree on the order.
    std::mt19937_64 rng(spec.seed * 1000003ULL + static_cast<std::uint64_t>(epoch));
    for (std::size_t i = all.size(); i > 1; --i) {
      const std::size_t j = static_cast<std::size_t>(rng() % i);
      std::swap(all[i - 1], all[j]);
    }
  }
  const std::int64_t per_rank = padded_shard_size(spec.dataset_size, spec.world_size);
  if (spec.pad_to_equal) {
    const std::size_t total = static_cast<std::size_t>(per_rank * spec.world_size);
    for (std::size_t i = 0; all.size() < total; ++i)
      all.push_back(all[i % static_cast<std::size_t>(spec.dataset_size)]);
  }
  std::vector<std::int64_t> mine;
  mine.reserve(static_cast<std::size_t>(per_rank));
  for (std::size_t i = static_cast<std::size_t>(spec.rank); i < all.size();
       i += static_cast<std::size_t>(spec.world_size))
    mine.push_back(all[i]);
  return mine;
}

}  // namespace xpuperf::data
