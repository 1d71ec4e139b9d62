#pragma once
// The training runtime's settings, read from the merged config once and checked: every key the
// runtime reads is a field here, so a walk from a YAML key to the step that uses it stops in this
// file. Errors name the key and the file:line its value came from.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "xpuperf/core/config.h"
#include "xpuperf/optim/optimizer_settings.h"
#include "xpuperf/train/precision.h"

namespace xpuperf::train {

struct TrainingSettings {
  // Batches and their split: each step takes `accumulation` micro-batches of `train_batch` a rank.
  std::int64_t train_batch = 0, eval_batch = 0;
  std::int64_t global_batch = 0;  // 0: train_batch × data-parallel ranks, no accumulation
  std::int64_t tensor_parallel = 1, pipeline_parallel = 1;
  std::int64_t expert_parallel = 1;  // ranks sharing each MoE layer's experts (expert_parallel.h)
  // Stop conditions and intervals (0: none).
  std::int64_t max_epochs = 0, max_steps = 0, max_samples = 0;
  double time_budget = 0;
  std::int64_t eval_every_epochs = 1, eval_every_steps = 0, log_freq = 100;
  // The learning rate's schedule.
  std::string lr_scheduler = "constant";
  double lr = 0, lr_gamma = 1.0;
  std::int64_t warmup_steps = 0, warmup_epochs = 0;
  // The target.
  std::string target_metric;
  double target_value = 0;
  std::string target_mode = "max";
  // The switches.
  Precision precision = Precision::FP32;
  double clip_grad_norm = 0;
  bool channels_last = false, cudnn_benchmark = false, cuda_graphs = false;
  bool activation_checkpointing = false, overlap_grad_reduce = true;
  std::int64_t zero_stage = 0;
  bool offload_optimizer = false;  // the optimizer's state and update on the host (offload_optimizer.h)
  bool offload_overlap = false;    // that update beside the next step (offload_optimizer.h)
  bool bf16_weights = false;       // the products' weights in bf16, fp32 masters in the optimizer (optimizers.h)
  std::int64_t bucket_bytes = 25 << 20;
  std::string dist_backend = "auto";
  double dist_timeout_s = 300;
  // Process and records.
  std::string device = "auto";
  std::int64_t num_threads = 0, seed = 1234;
  bool record_loss_curve = false;
  std::int64_t timing_skip_steps = 0;
  std::int64_t profile_steps = 0;  // steps after timing_skip_steps whose device kernels FINISHED lists
  std::int64_t census_steps = 0;   // the last steps before timing_skip_steps whose operator calls FINISHED lists
  std::string data_dir, init_checkpoint, save_checkpoint;
  optim::OptimizerSettings optimizer;  // the optimizer's keys (optim/optimizer_settings.h)
  // Every declared switch's value (core/switch_spec.h: its default where the config sets none), as
  // the fields above read them and SUBMIT_INFO and FINISHED write them.
  nlohmann::json switches;
  // LoRA fine-tuning (parallel/lora.h): rank 0 trains the whole model.
  std::int64_t lora_rank = 0;
  double lora_alpha = 32, lora_dropout = 0.05;
  std::vector<std::string> lora_targets;

  // Where each key's value came from (file:line), for the refusals the run makes once it knows the
  // device and the model; the config's origin for a key it does not set.
  Source where(const std::string& key) const;
  std::map<std::string, Source> sources;
  Source origin;

  // Ranks that share data (the world without model parallelism).
  int data_ranks(int world_size) const { return world_size / static_cast<int>(tensor_parallel * pipeline_parallel); }
  // Micro-batches a step accumulates.
  std::int64_t accumulation(int world_size) const {
    return global_batch > 0 ? global_batch / (train_batch * data_ranks(world_size)) : 1;
  }
};

// Reads and checks the runtime's settings: the switches and their combinations as `xpuperf check`
// checks them (a config built in code, as the tests build theirs, comes here without that), the
// stop condition, the target. ConfigError naming the key and where its value came from.
TrainingSettings read_training_settings(const Config& cfg, int world_size);

}  // namespace xpuperf::train
