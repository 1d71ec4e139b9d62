#pragma once
// What a standard training case provides; the runtime (runtime.h) owns everything else: the
// loop, events, distribution, precision, evaluation schedule and stopping.
// FlagPerf's trainer_adapter + evaluator and Rapidformer's providers, as one small class.

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xpuperf/core/config.h"

namespace xpuperf::train {

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

// Metrics as sums over samples: value = sum / count, summed over batches and ranks first.
class MetricSums {
 public:
  void add(const std::string& name, double sum, double count);
  const std::map<std::string, std::pair<double, double>>& sums() const { return sums_; }
  std::map<std::string, std::pair<double, double>>& sums() { return sums_; }
  std::map<std::string, double> values() const;

 private:
  std::map<std::string, std::pair<double, double>> sums_;
};

struct CaseContext {
  const Config& config;
  torch::Device device;
  int rank = 0;
  int world_size = 1;
  int local_world_size = 1;  // ranks on this host, which share its cores
};

class TrainingCase {
 public:
  virtual ~TrainingCase() = default;
  // Training and evaluation data (read from config's data_dir, or synthetic when asked).
  virtual Datasets datasets(const CaseContext& ctx) = 0;
  // The model, on ctx.device. The case keeps what it needs to run forward_step.
  virtual std::shared_ptr<torch::nn::Module> model(const CaseContext& ctx) = 0;
  // The loss of one batch (already on the device), in training mode.
  virtual torch::Tensor forward_step(const Batch& batch) = 0;
  // Adds one evaluation batch's metrics (in eval mode, without gradients).
  virtual void evaluate(const Batch& batch, MetricSums& sums) = 0;
  // Training FLOPs per sample (forward + backward), for MFU; 0 when unknown.
  virtual double train_flops_per_sample() const { return 0.0; }
  // Tokens in one training sample (language cases), for tokens/s; 0 for cases without tokens.
  virtual std::int64_t tokens_per_sample() const { return 0; }
  // Metrics that are not means over samples, from those that are (perplexity = exp(loss)); called
  // on the evaluation's metrics after they are summed over the ranks.
  virtual void derive_metrics(std::map<std::string, double>& metrics) const { (void)metrics; }
  // Names a weights file may hold as copies of a tied parameter (Hugging Face saves GPT-2's output
  // layer as lm_head.weight beside transformer.wte.weight): alias → the model's name. An alias
  // must equal what it copies.
  virtual std::map<std::string, std::string> tied_weights() const { return {}; }
  // A state_dict init_checkpoint names, in another project's names for this model (CPM-1's
  // Megatron names for the GPT), renamed to the model's in place: returns the layout it converted
  // from, or "" where the names are not that layout's (torchrt::StateDictConversion).
  virtual std::string convert_checkpoint(std::map<std::string, torch::Tensor>& tensors) const {
    (void)tensors;
    return "";
  }
  // Whether init_checkpoint is a pretrained model with other parts (a fine-tuning case): the
  // tensors the model names are loaded and the rest of the model keeps its initialisation
  // (torchrt::load_pretrained), instead of every name having to match.
  virtual bool starts_from_pretrained() const { return false; }
  // PEFT's task_type for saved LoRA adapters (CAUSAL_LM, ...); "" where PEFT has none.
  virtual std::string peft_task_type() const { return ""; }
  // What STEP_END adds of the case's own: counts over this rank's training steps since the previous
  // STEP_END (a mixture of experts' routed and dropped tokens), which the case then starts again.
  virtual void step_counters(std::map<std::string, double>& counters) { (void)counters; }
  // A micro-batch ran as a replay of the captured CUDA graph (cuda_graphs), without forward_step:
  // what forward_step counts on the host should count it as the captured one.
  virtual void micro_batch_replayed() {}
};

// Registration, so adding a case is adding a folder.
using TrainingCaseFactory = std::function<std::unique_ptr<TrainingCase>()>;
bool register_training_case(const std::string& model, const std::string& framework, TrainingCaseFactory factory);
std::unique_ptr<TrainingCase> make_training_case(const std::string& model, const std::string& framework);
std::vector<std::string> registered_training_cases();  // "model:framework"

#define XPUPERF_REGISTER_TRAINING_CASE(model, framework, Type)                            \
  static const bool xpuperf_registered_##Type = ::xpuperf::train::register_training_case( \
      model, framework, [] { return std::unique_ptr<::xpuperf::train::TrainingCase>(new Type()); })

}  // namespace xpuperf::train
