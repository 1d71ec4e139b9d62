#pragma once
// What a standard training case provides; the runtime (runtime.h) owns everything else: the
// loop, events, distribution, precision, evaluation schedule and stopping.
// FlagPerf's trainer_adapter + evaluator and Rapidformer's providers, as one small class.

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "xpuperf/core/config.h"
#include "xpuperf/datasets/dataset.h"

namespace xpuperf::train {

// The datasets' vocabulary, in which a training case speaks to the runtime.
using datasets::Batch;
using datasets::CaseContext;
using datasets::Dataset;
using datasets::Datasets;
using datasets::EpochPlan;
using datasets::IndexedDataset;
using datasets::TensorDataset;

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
