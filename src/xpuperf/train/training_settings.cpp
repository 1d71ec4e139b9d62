#include "xpuperf/train/training_settings.h"

#include "xpuperf/core/diagnostics.h"
#include "xpuperf/core/switch_spec.h"
#include "xpuperf/core/training_switches.h"

namespace xpuperf::train {

TrainingSettings read_training_settings(const Config& cfg, int world_size) {
  // The ranges and the switches' combinations, as `xpuperf check` checks them, before any value is
  // read: what follows reads values known to be in range.
  {
    Diagnostics problems;
    check_training_switches(cfg, world_size, problems);
    for (const auto& d : problems.items())
      if (d.severity == Severity::Error) throw ConfigError(d.where.str() + ": " + d.message);
  }
  TrainingSettings s;
  // The switches' values with their declared defaults: each default is written once, beside its
  // strategy.
  s.switches = switch_values(cfg);
  const auto flag = [&](const char* key) { return s.switches.at(key).get<bool>(); };
  const auto count = [&](const char* key) { return s.switches.at(key).get<std::int64_t>(); };
  s.train_batch = cfg.get_int("train_batch_size");
  s.eval_batch = cfg.get_int("eval_batch_size");
  s.max_epochs = cfg.get_int("max_epochs", 0);
  s.max_steps = cfg.get_int("max_steps", 0);
  s.max_samples = cfg.get_int("max_samples_termination", 0);
  s.time_budget = cfg.get_number("time_budget", 0.0);
  s.eval_every_epochs = cfg.get_int("eval_interval_epochs", 1);
  s.eval_every_steps = cfg.get_int("eval_interval_steps", 0);
  s.log_freq = cfg.get_int("log_freq", 100);
  s.warmup_steps = cfg.get_int("warmup_steps", 0);
  s.lr_scheduler = cfg.get_string("lr_scheduler", "constant");
  s.lr = cfg.get_number("lr");
  s.target_metric = cfg.get_string("target_metric");
  s.target_value = cfg.get_number("target_value");
  s.target_mode = cfg.get_string("target_mode", "max");
  if (s.target_mode != "max" && s.target_mode != "min")
    throw ConfigError(cfg.at("target_mode").source.str() + ": 'target_mode' must be max or min");
  if (s.max_epochs == 0 && s.max_steps == 0 && s.max_samples == 0 && s.time_budget <= 0)
    throw ConfigError("no stop condition: set max_epochs, max_steps, max_samples_termination or time_budget");
  s.precision = parse_precision(s.switches.at("precision").get<std::string>());
  s.clip_grad_norm = cfg.get_number("clip_grad_norm", 0.0);
  s.channels_last = flag("channels_last");
  s.cudnn_benchmark = flag("cudnn_benchmark");
  s.cuda_graphs = flag("cuda_graphs");
  s.activation_checkpointing = flag("activation_checkpointing");
  s.zero_stage = count("zero_stage");
  s.tensor_parallel = count("tensor_parallel");
  s.expert_parallel = count("expert_parallel");
  s.pipeline_parallel = count("pipeline_parallel");
  s.global_batch = count("global_batch_size");
  s.record_loss_curve = cfg.get_bool("record_loss_curve", false);
  s.timing_skip_steps = cfg.get_int("timing_skip_steps", 0);
  s.profile_steps = cfg.get_int("profile_steps", 0);
  s.census_steps = cfg.get_int("census_steps", 0);
  // The census watches the last steps before the timed ones (its callbacks slow what they watch),
  // after a first step whose calls are its own (the optimizer's state made, cuDNN's search).
  if (s.census_steps > 0 && s.timing_skip_steps < s.census_steps + 1)
    throw ConfigError(cfg.at("census_steps").source.str() + ": census_steps " + std::to_string(s.census_steps) +
                      " needs timing_skip_steps of " + std::to_string(s.census_steps + 1) +
                      " or more: the census watches the last untimed steps, after the first");
  if (s.census_steps > 0 && cfg.get_bool("cuda_graphs", false))
    throw ConfigError(cfg.at("census_steps").source.str() +
                      ": census_steps with cuda_graphs: a device graph's replay calls no operator, so the census "
                      "would see none; take the census with --set cuda_graphs=false");
  s.seed = cfg.get_int("seed", 1234);
  s.warmup_epochs = cfg.get_int("warmup_epochs", 0);
  s.lr_gamma = cfg.get_number("lr_gamma", 1.0);
  s.device = cfg.get_string("device", "auto");
  s.num_threads = cfg.get_int("num_threads", 0);
  s.dist_backend = cfg.get_string("dist_backend", "auto");
  s.dist_timeout_s = cfg.get_number("dist_timeout", 300.0);
  s.bucket_bytes = static_cast<std::int64_t>(cfg.get_number("bucket_size_mb", 25.0) * (1 << 20));
  s.overlap_grad_reduce = flag("overlap_grad_reduce");
  s.data_dir = cfg.get_string("data_dir", "");
  s.init_checkpoint = cfg.get_string("init_checkpoint", "");
  s.save_checkpoint = cfg.get_string("save_checkpoint", "");
  s.offload_optimizer = flag("offload_optimizer");
  s.offload_overlap = flag("offload_overlap");
  s.bf16_weights = flag("bf16_weights");
  s.lora_rank = count("lora_rank");
  s.lora_alpha = cfg.get_number("lora_alpha", s.lora_alpha);
  s.lora_dropout = cfg.get_number("lora_dropout", s.lora_dropout);
  if (s.lora_rank > 0) s.lora_targets = cfg.get_string_list("lora_targets");
  s.optimizer = optim::read_optimizer_settings(cfg);
  for (const auto& key : cfg.keys()) s.sources[key] = cfg.at(key).source;
  s.origin = Source{cfg.origin(), 0};
  return s;
}

Source TrainingSettings::where(const std::string& key) const {
  const auto it = sources.find(key);
  return it == sources.end() ? origin : it->second;
}

}  // namespace xpuperf::train
