#pragma once
// Which samples each rank reads in an epoch: one shuffle per epoch, the same on every rank
// (seeded by seed and epoch), split so that every rank gets the same number of samples, as
// PyTorch's DistributedSampler does. Torch-free.

#include <cstdint>
#include <vector>

namespace xpuperf::data {

struct ShardSpec {
  std::int64_t dataset_size = 0;
  int rank = 0;
  int world_size = 1;
  bool shuffle = true;
  std::uint64_t seed = 0;
  // Training pads the split with wrapped-around samples so all ranks take the same number of
  // steps (collectives need it); evaluation does not, so every sample counts once.
  bool pad_to_equal = true;
};

// The indices rank `spec.rank` reads in `epoch`, in order.
std::vector<std::int64_t> shard_indices(const ShardSpec& spec, std::int64_t epoch);

// Samples per rank per epoch when padded (the same on all ranks).
std::int64_t padded_shard_size(std::int64_t dataset_size, int world_size);

}  // namespace xpuperf::data
