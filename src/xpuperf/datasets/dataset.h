#pragma once
// Where a case's samples come from, for the training runtime and the inference cases alike: a batch,
// one epoch's share for a rank, the Dataset interface and the datasets held in memory.

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "xpuperf/core/config.h"

namespace xpuperf::datasets {

// One batch: the tensors a case's forward_step takes (inputs, targets, ...).
using Batch = std::vector<torch::Tensor>;

// Which share of one epoch a rank reads, and how.
struct EpochPlan {
  std::int64_t epoch = 0;
  std::int64_t batch_size = 1;
  // Training: shuffled (seeded by seed and epoch), shards padded to the same size on every rank.
  // Evaluation: in order, every sample once.
  bool train = true;
  int rank = 0;
  int world_size = 1;
  std::uint64_t seed = 0;
};

// Where a case's samples come from. The runtime asks for one epoch at a time and takes its
// batches in order; a dataset may prepare them ahead (image decoding on worker threads).
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::int64_t size() const = 0;
  // Where the data came from, e.g. "Fashion-MNIST train, 60000 images from DIR", or
  // "synthetic (random images)" so results on it are never mistaken for real ones.
  virtual std::string description() const = 0;
  // How many batches start_epoch(plan) gives (the same on every rank when training).
  virtual std::int64_t batches_in_epoch(const EpochPlan& plan) const = 0;
  virtual void start_epoch(const EpochPlan& plan) = 0;
  // The epoch's next batch, on the CPU (or already on the device); nothing at its end.
  virtual std::optional<Batch> next_batch() = 0;
  // Samples this dataset skipped so far (files that did not decode), each counted once.
  virtual std::int64_t skipped_samples() const { return 0; }
};

// Random access to samples: an epoch is this rank's shard (data/shard_sampler.h) gathered
// batch by batch with get(). The last batch of an epoch may be smaller. (Gathering on a helper
// thread was tried: a thread a batch starts its own OpenMP team, which made LeNet-5 forty times
// slower on two cores; a dataset with costly samples prepares them itself, as the image loader does.)
class IndexedDataset : public Dataset {
 public:
  // The samples at `indices` (int64, on the CPU), stacked along dimension 0.
  virtual Batch get(const torch::Tensor& indices) const = 0;

  std::int64_t batches_in_epoch(const EpochPlan& plan) const override;
  void start_epoch(const EpochPlan& plan) override;
  std::optional<Batch> next_batch() override;

 private:
  torch::Tensor indices_;  // this rank's samples in the epoch; batches are views of it
  std::int64_t next_ = 0;
  std::int64_t batch_size_ = 1;
};

// A dataset held in memory as tensors that share dimension 0.
class TensorDataset : public IndexedDataset {
 public:
  TensorDataset(std::vector<torch::Tensor> tensors, std::string description);
  std::int64_t size() const override { return tensors_[0].size(0); }
  Batch get(const torch::Tensor& indices) const override;
  std::string description() const override { return description_; }

 private:
  std::vector<torch::Tensor> tensors_;
  std::string description_;
};

struct Datasets {
  std::shared_ptr<Dataset> train;
  std::shared_ptr<Dataset> eval;
};

// What a case reads its data and builds its model with: the run's config, the device, this rank.
struct CaseContext {
  const Config& config;
  // Every declared switch's value by key (TrainingSettings::switches: the config's, else the
  // declaration's default); a case reads its switches here, never from `config`.
  const nlohmann::json& switches;
  torch::Device device;
  int rank = 0;
  int world_size = 1;
  int local_world_size = 1;  // ranks on this host, which share its cores
};

}  // namespace xpuperf::datasets
