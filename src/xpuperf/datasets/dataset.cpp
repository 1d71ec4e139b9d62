#include "xpuperf/datasets/dataset.h"

#include <algorithm>
#include <utility>

#include "xpuperf/data/shard_sampler.h"

namespace xpuperf::datasets {

namespace {
data::ShardSpec shard_spec(const Dataset& d, const EpochPlan& plan) {
  return {d.size(), plan.rank, plan.world_size, plan.train, plan.seed, plan.train};
}
}  // namespace

std::int64_t IndexedDataset::batches_in_epoch(const EpochPlan& plan) const {
  const std::int64_t n = plan.train ? data::padded_shard_size(size(), plan.world_size)
                                    : static_cast<std::int64_t>(data::shard_indices(shard_spec(*this, plan), 0).size());
  return (n + plan.batch_size - 1) / plan.batch_size;
}

void IndexedDataset::start_epoch(const EpochPlan& plan) {
  TORCH_CHECK(plan.batch_size > 0, "batch size must be positive");
  indices_ = torch::tensor(data::shard_indices(shard_spec(*this, plan), plan.epoch));
  next_ = 0;
  batch_size_ = plan.batch_size;
}

std::optional<Batch> IndexedDataset::next_batch() {
  if (!indices_.defined() || next_ >= indices_.size(0)) return std::nullopt;
  const std::int64_t end = std::min(indices_.size(0), next_ + batch_size_);
  Batch batch = get(indices_.slice(0, next_, end));
  next_ = end;
  return batch;
}

TensorDataset::TensorDataset(std::vector<torch::Tensor> tensors, std::string description)
    : tensors_(std::move(tensors)), description_(std::move(description)) {
  TORCH_CHECK(!tensors_.empty(), "a TensorDataset needs at least one tensor");
  for (const auto& t : tensors_) TORCH_CHECK(t.size(0) == tensors_[0].size(0), "tensors differ in dimension 0");
}

Batch TensorDataset::get(const torch::Tensor& indices) const {
  Batch batch;
  for (const auto& t : tensors_) batch.push_back(t.index_select(0, indices));
  return batch;
}

}  // namespace xpuperf::datasets
