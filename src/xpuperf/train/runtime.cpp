#include "xpuperf/train/runtime.h"

#include <cmath>
#include <filesystem>
#include <thread>

#ifdef XPUPERF_HAVE_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "xpuperf/core/host_memory.h"
#include "xpuperf/core/log.h"
#include "xpuperf/core/training_switches.h"
#include "xpuperf/data/shard_sampler.h"
#include "xpuperf/train/activation_checkpoint.h"
#include "xpuperf/train/compat.h"
#include "xpuperf/train/distributed.h"
#include "xpuperf/train/model_parallel.h"
#include "xpuperf/train/optimizers.h"
#include "xpuperf/train/pipeline.h"
#include "xpuperf/train/precision.h"
#include "xpuperf/train/step_graph.h"
#include "xpuperf/train/tensor_parallel.h"
#include "xpuperf/train/weights.h"
#include "xpuperf/train/zero.h"

namespace xpuperf::train {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::TargetReached:
      return "target_reached";
    case StopReason::MaxEpochs:
      return "max_epochs";
    case StopReason::MaxSteps:
      return "max_steps";
    case StopReason::MaxSamples:
      return "max_samples_termination";
    case StopReason::TimeBudget:
      return "time_budget";
  }
  return "unknown";
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

torch::Device choose_device(const std::string& name, int local_rank) {
  if (name == "cpu") return torch::kCPU;
  const bool have_cuda = torch::cuda::is_available();
  if (name == "cuda" && !have_cuda)
    throw ConfigError("device: cuda was asked for, but this LibTorch build or machine has no CUDA device");
  if (name != "cuda" && name != "auto") throw ConfigError("'device' must be auto, cpu or cuda, got '" + name + "'");
  if (!have_cuda) return torch::kCPU;
  const auto count = static_cast<int>(torch::cuda::device_count());
  if (local_rank >= count)
    throw ConfigError("LOCAL_RANK " + std::to_string(local_rank) + " has no CUDA device (" + std::to_string(count) +
                      " visible); lower nproc or check the visible-devices variable");
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank));
}

double scheduled_lr(const std::string& schedule, double base_lr, std::int64_t step, std::int64_t warmup_steps,
                    std::int64_t total_steps, std::int64_t steps_per_epoch, double gamma) {
  if (warmup_steps > 0 && step < warmup_steps)
    return base_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  if (schedule == "exponential") {
    if (steps_per_epoch <= 0) return base_lr;
    return base_lr * std::pow(gamma, static_cast<double>(step / steps_per_epoch));
  }
  if (schedule == "constant" || total_steps <= warmup_steps) return base_lr;
  const double progress =
      std::min(1.0, static_cast<double>(step - warmup_steps) / static_cast<double>(total_steps - warmup_steps));
  if (schedule == "cosine") return base_lr * 0.5 * (1.0 + std::cos(M_PI * progress));
  if (schedule == "linear") return base_lr * (1.0 - progress);
  throw ConfigError("'lr_scheduler' must be constant, cosine, linear or exponential, got '" + schedule + "'");
}

namespace {

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::int64_t non_negative(const Config& cfg, const std::string& key, std::int64_t fallback) {
  const std::int64_t v = cfg.get_int(key, fallback);
  if (v < 0)
    throw ConfigError(cfg.at(key).source.str() + ": '" + key + "' must be 0 or more, got " + std::to_string(v));
  return v;
}

std::int64_t positive(const Config& cfg, const std::string& key) {
  const std::int64_t v = cfg.get_int(key);
  if (v <= 0)
    throw ConfigError(cfg.at(key).source.str() + ": '" + key + "' must be positive, got " + std::to_string(v));
  return v;
}

// A batch on the device, in the memory layout the run asks for.
void to_device(Batch& batch, const torch::Device& device, bool channels_last) {
  for (auto& t : batch) {
    t = t.to(device, /*non_blocking=*/true);
    if (channels_last && t.dim() == 4) t = t.contiguous(at::MemoryFormat::ChannelsLast);
  }
}

// Where an evaluation's metrics come from: the data-parallel ranks' shares, summed over `sum_over`
// (with pipeline stages, the world: ranks that hold no metrics — stages before the last, tensor-
// parallel copies — send zeros).
struct EvalRanks {
  Distributed& data;
  Distributed& sum_over;
  bool holds_metrics = true;
  PipelineStage* pipeline = nullptr;
};

// Evaluates on this rank's share of the eval set and sums the metrics over ranks.
std::map<std::string, double> evaluate(TrainingCase& c, torch::nn::Module& model, Dataset& eval_set,
                                       std::int64_t batch_size, const torch::Device& device, Precision precision,
                                       bool channels_last, const EvalRanks& ranks) {
  model.eval();
  torch::NoGradGuard no_grad;
  EpochPlan plan;
  plan.batch_size = batch_size;
  plan.train = false;
  plan.rank = ranks.data.rank();
  plan.world_size = ranks.data.world_size();
  eval_set.start_epoch(plan);
  MetricSums sums;
  while (auto batch = eval_set.next_batch()) {
    to_device(*batch, device, channels_last);
    AutocastScope autocast(device, precision);
    if (ranks.pipeline)
      ranks.pipeline->forward_only((*batch)[0], [&] { c.evaluate(*batch, sums); });
    else
      c.evaluate(*batch, sums);
  }
  // Every rank must send the same metric names, whatever its share held.
  std::vector<double> flat;
  for (const auto& [name, s] : sums.sums()) {
    flat.push_back(ranks.holds_metrics ? s.first : 0.0);
    flat.push_back(ranks.holds_metrics ? s.second : 0.0);
  }
  auto t = torch::tensor(flat, torch::TensorOptions().dtype(torch::kDouble)).to(device);
  ranks.sum_over.all_reduce_sum(t);
  t = t.cpu();
  std::size_t k = 0;
  for (auto& [name, s] : sums.sums()) {
    s.first = t[static_cast<std::int64_t>(k++)].item<double>();
    s.second = t[static_cast<std::int64_t>(k++)].item<double>();
  }
  model.train();
  auto values = sums.values();
  c.derive_metrics(values);
  return values;
}

// The most device memory the caching allocator held in tensors at once, in MiB; -1 if unknown.
double peak_device_memory_mib(const torch::Device& device) {
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return static_cast<double>(stats.allocated_bytes[0].peak) / (1 << 20);  // [0]: all pools together
  }
#endif
  (void)device;
  return -1;
}

bool reached(double value, double target, const std::string& mode) {
  return mode == "min" ? value <= target : value >= target;
}

std::string resolve_in(const std::string& dir, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute() || dir.empty()) return path;
  return (fs::path(dir) / path).string();
}

}  // namespace

TrainingOutcome run_training(TrainingCase& c, const Config& cfg, const RunInfo& info, std::ostream& out) {
  const int rank = info.env.rank;
  PerfLogWriter log(out, rank);
  const bool leader = rank == 0;
  // Training events come from rank 0 only; each names the line of this file that wrote it.
  auto event_at = [&](int line, const char* name, const json& value) {
    if (leader) log.log(name, value, "runtime.cpp", line);
  };
#define XPUPERF_EVENT(...) event_at(__LINE__, __VA_ARGS__)
  const auto init_start = Clock::now();
  log.log(perflog_event::kInitStart, nullptr, "runtime.cpp", __LINE__);

  // Parameters, checked before any work.
  const std::int64_t train_batch = positive(cfg, "train_batch_size");
  const std::int64_t eval_batch = positive(cfg, "eval_batch_size");
  const std::int64_t max_epochs = non_negative(cfg, "max_epochs", 0);
  const std::int64_t max_steps = non_negative(cfg, "max_steps", 0);
  const std::int64_t max_samples = non_negative(cfg, "max_samples_termination", 0);
  const double time_budget = cfg.get_number("time_budget", 0.0);
  const std::int64_t eval_every_epochs = non_negative(cfg, "eval_interval_epochs", 1);
  const std::int64_t eval_every_steps = non_negative(cfg, "eval_interval_steps", 0);
  const std::int64_t log_freq = non_negative(cfg, "log_freq", 100);
  const std::int64_t warmup_steps = non_negative(cfg, "warmup_steps", 0);
  const std::string schedule = cfg.get_string("lr_scheduler", "constant");
  const double base_lr = cfg.get_number("lr");
  const std::string target_metric = cfg.get_string("target_metric");
  const double target_value = cfg.get_number("target_value");
  const std::string target_mode = cfg.get_string("target_mode", "max");
  if (target_mode != "max" && target_mode != "min")
    throw ConfigError(cfg.at("target_mode").source.str() + ": 'target_mode' must be max or min");
  if (max_epochs == 0 && max_steps == 0 && max_samples == 0 && time_budget <= 0)
    throw ConfigError("no stop condition: set max_epochs, max_steps, max_samples_termination or time_budget");
  {
    // The switches and their combinations, checked as when a config loads (`xpuperf check`): a
    // config built in code (the tests') comes here without that.
    Diagnostics switches;
    check_training_switches(cfg, info.env.world_size, switches);
    for (const auto& d : switches.items())
      if (d.severity == Severity::Error) throw ConfigError(d.where.str() + ": " + d.message);
  }
  const Precision precision = parse_precision(cfg.get_string("precision", "fp32"));
  const bool checkpoint_activations = cfg.get_bool("activation_checkpointing", false);
  const std::int64_t zero_stage = cfg.get_int("zero_stage", 0);
  // Model parallelism: groups of `tensor_parallel` ranks share each sample's layers, pipelines of
  // `pipeline_parallel` such groups its blocks; data parallelism runs over the pipelines.
  const std::int64_t tensor_parallel = cfg.get_int("tensor_parallel", 1);
  const std::int64_t pipeline_parallel = cfg.get_int("pipeline_parallel", 1);
  const int data_ranks = info.env.world_size / static_cast<int>(tensor_parallel * pipeline_parallel);
  // Gradient accumulation: each step takes `accumulation` micro-batches of train_batch_size a rank.
  const std::int64_t global_batch = cfg.get_int("global_batch_size", 0);
  const std::int64_t micro_batches_per_step = train_batch * data_ranks;
  const std::int64_t accumulation = global_batch > 0 ? global_batch / micro_batches_per_step : 1;
  const bool record_loss_curve = cfg.get_bool("record_loss_curve", false);
  const std::int64_t timing_skip_steps = non_negative(cfg, "timing_skip_steps", 0);
  const std::int64_t seed = cfg.get_int("seed", 1234);
  const std::int64_t warmup_epochs = non_negative(cfg, "warmup_epochs", 0);
  const double lr_gamma = cfg.get_number("lr_gamma", 1.0);
  const double clip_grad_norm = cfg.get_number("clip_grad_norm", 0.0);
  const bool channels_last = cfg.get_bool("channels_last", false);
  const bool cudnn_benchmark = cfg.get_bool("cudnn_benchmark", false);
  const bool cuda_graphs = cfg.get_bool("cuda_graphs", false);

  const torch::Device device = choose_device(cfg.get_string("device", "auto"), info.env.local_rank);
  if (precision == Precision::FP16 && !device.is_cuda() && !compat::cpu_autocast_supports_fp16())
    throw ConfigError(cfg.at("precision").source.str() + ": precision: fp16 needs a CUDA device with this LibTorch (" +
                      "this run is on " + device.str() + "); use bf16 or fp32 on the CPU");
  const OptimizerImpl optimizer_impl = parse_optimizer_impl(cfg, device);
  if (!device.is_cuda()) keep_freed_host_memory();
  apply_tf32_setting(precision);
  // Lets cuDNN time its convolution algorithms on the first batch of each shape and keep the fastest.
  if (device.is_cuda()) at::globalContext().setBenchmarkCuDNN(cudnn_benchmark);
  if (device.is_cuda()) torch::cuda::manual_seed_all(static_cast<std::uint64_t>(seed));
  torch::manual_seed(static_cast<std::uint64_t>(seed));
  if (const std::int64_t threads = cfg.get_int("num_threads", 0); threads > 0) {
    torch::set_num_threads(static_cast<int>(threads));
  } else {
    // LibTorch may default to one thread; share the cores between the ranks of this host.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    torch::set_num_threads(static_cast<int>(std::max(1u, cores / static_cast<unsigned>(info.env.local_world_size))));
  }

  DistributedOptions dist_options;
  dist_options.backend = cfg.get_string("dist_backend", "auto");
  dist_options.timeout =
      std::chrono::milliseconds(static_cast<std::int64_t>(cfg.get_number("dist_timeout", 300.0) * 1000));
  dist_options.bucket_bytes = static_cast<std::int64_t>(cfg.get_number("bucket_size_mb", 25.0) * (1 << 20));
  auto dist = Distributed::create(info.env, device, dist_options);
  // The data-parallel ranks (gradients, metrics, data shards) are the world without model
  // parallelism, else the ranks at the same stage and place of every pipeline.
  ParallelGroups groups =
      form_parallel_groups(*dist, static_cast<int>(tensor_parallel), static_cast<int>(pipeline_parallel));
  const std::shared_ptr<TensorParallel>& tp = groups.tp;
  const std::shared_ptr<PipelineStage>& pipeline = groups.pipeline;
  Distributed& data_dist = groups.data ? *groups.data : *dist;

  const CaseContext ctx{cfg, device, data_dist.rank(), data_dist.world_size(), info.env.local_world_size};
  const Datasets data = c.datasets(ctx);
  auto model = c.model(ctx);
  const std::string data_dir = cfg.get_string("data_dir", "");
  if (const std::string init = cfg.get_string("init_checkpoint", ""); !init.empty()) {
    const std::string path = resolve_in(data_dir, init);
    if (!fs::exists(path))
      throw ConfigError(cfg.at("init_checkpoint").source.str() + ": init_checkpoint '" + path + "' does not exist");
    try {
      load_weights(*model, path, c.tied_weights());  // a LibTorch archive or a state_dict saved in Python
    } catch (const std::runtime_error& e) {
      throw ConfigError(std::string("init_checkpoint: ") + e.what());
    }
  }
  if (channels_last) {
    // Convolution weights in NHWC, as the inputs will be: the layout Tensor Cores read directly.
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters())
      if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
  }
  if (checkpoint_activations && set_activation_checkpointing(*model, true) == 0)
    throw ConfigError(cfg.at("activation_checkpointing").source.str() + ": activation_checkpointing: the model of " +
                      info.case_name + " has no blocks to checkpoint; set activation_checkpointing: false");
  dist->broadcast_parameters(model->parameters());  // the whole model, the same on every rank of the world
  SplitModel split = split_model(*model, groups, cfg, info.case_name);
  const std::vector<torch::Tensor>& params = split.params;
  const std::vector<torch::Tensor>& split_params = split.split;
  const std::vector<torch::Tensor>& tied_across_stages = split.tied_across_stages;
  std::unique_ptr<ZeroSharding> zero;
  std::function<void()> unhook_blocks;  // stage 3: takes ZeRO's hooks off the model
  struct Unhook {
    std::function<void()>& f;
    ~Unhook() {
      if (f) f();
    }
  } unhook_at_exit{unhook_blocks};
  std::unique_ptr<StepOptimizer> optimizer;
  if (zero_stage > 0) {
    std::vector<torch::Tensor> trained;
    std::vector<bool> decays;
    for (const auto& p : params) {
      if (!p.requires_grad()) continue;
      trained.push_back(p);
      decays.push_back(takes_weight_decay(cfg, p));
    }
    std::vector<torch::nn::Module*> blocks;
    const auto stacks = block_stacks(*model);
    for (auto* stack : stacks)
      for (auto* block : stack->blocks()) blocks.push_back(block);
    if (zero_stage == 3 && blocks.empty())
      throw ConfigError(cfg.at("zero_stage").source.str() +
                        ": zero_stage: 3 shards the parameters of a model's blocks, and the model of " +
                        info.case_name + " has none; use zero_stage: 2");
    zero = std::make_unique<ZeroSharding>(data_dist, trained, decays, static_cast<int>(zero_stage),
                                          dist_options.bucket_bytes, blocks);
    if (zero_stage == 3) {
      // The model outlives this run; the hooks come off (and the parameters back) when it ends.
      for (auto* stack : stacks) stack->set_block_hooks(std::shared_ptr<BlockHooks>(zero.get(), [](BlockHooks*) {}));
      unhook_blocks = [stacks, z = zero.get()] {
        for (auto* stack : stacks) stack->set_block_hooks(nullptr);
        // Gathering is collective: not while an error unwinds this rank alone.
        if (std::uncaught_exceptions() == 0) z->gather_all();
      };
    }
    optimizer = make_optimizer(cfg, zero->shares_with_decay(), zero->shares_without_decay(), optimizer_impl);
  } else {
    if (cfg.get_bool("overlap_grad_reduce", true)) data_dist.attach_gradient_hooks(params);
    optimizer = make_optimizer(cfg, *model, optimizer_impl);
  }
  std::unique_ptr<LossScaler> scaler;
  if (precision == Precision::FP16) scaler = std::make_unique<LossScaler>();
  std::unique_ptr<StepGraph> step_graph;
  if (cuda_graphs) {
    const std::string where = cfg.at("cuda_graphs").source.str() + ": cuda_graphs: ";
    if (!device.is_cuda() || !StepGraph::available())
      throw ConfigError(where + "CUDA graphs need a CUDA device and a LibTorch built with CUDA (this run is on " +
                        device.str() + "); set cuda_graphs: false");
    step_graph = std::make_unique<StepGraph>(device, params);
  }
  // What the optimizer steps and clipping scales: the parameters, or this rank's ZeRO shares.
  const std::vector<torch::Tensor> stepped = zero ? zero->all_shares() : params;
  // Each rank checked its own gradients: ZeRO's shares, a tensor-parallel part, a pipeline stage.
  std::function<void(torch::Tensor&)> agree_on_inf;
  if (zero) agree_on_inf = [&zero](torch::Tensor& found_inf) { zero->reduce_max(found_inf); };
  if (tp || pipeline) agree_on_inf = [&dist](torch::Tensor& found_inf) { dist->all_reduce_max(found_inf); };

  EpochPlan train_plan;
  train_plan.batch_size = train_batch;
  train_plan.train = true;
  train_plan.rank = data_dist.rank();
  train_plan.world_size = data_dist.world_size();
  train_plan.seed = static_cast<std::uint64_t>(seed);
  const std::int64_t tokens_per_sample = c.tokens_per_sample();
  const std::int64_t batches_per_epoch = data.train->batches_in_epoch(train_plan);
  const std::int64_t steps_per_epoch = batches_per_epoch / accumulation;
  if (steps_per_epoch <= 0)
    throw ConfigError("the training data (" + data.train->description() +
                      ") has fewer samples per rank than one step (" + std::to_string(train_batch * accumulation) +
                      "); lower train_batch_size or global_batch_size, or use more data");
  std::int64_t total_steps = max_steps > 0 ? max_steps : max_epochs * steps_per_epoch;
  if (total_steps == 0) total_steps = steps_per_epoch;  // only a sample or time limit: schedule over one epoch
  const std::int64_t warmup = warmup_steps + warmup_epochs * steps_per_epoch;

  const double init_time = seconds_since(init_start);
  log.log(perflog_event::kInitEnd, {{"init_time", init_time}}, "runtime.cpp", __LINE__);
  XPUPERF_EVENT(perflog_event::kSubmitInfo, {{"case", info.case_name},
                                             {"vendor", info.vendor},
                                             {"world_size", info.env.world_size},
                                             {"device", device.str()},
                                             {"dist_backend", dist->backend()},
                                             {"tensor_parallel", tensor_parallel},
                                             {"pipeline_parallel", pipeline_parallel},
                                             {"precision", precision_name(precision)},
                                             {"train_batch_size", train_batch},
                                             {"global_batch_size", micro_batches_per_step * accumulation},
                                             {"accumulation_steps", accumulation},
                                             {"zero_stage", zero_stage},
                                             {"activation_checkpointing", checkpoint_activations},
                                             {"channels_last", channels_last},
                                             {"cudnn_benchmark", cudnn_benchmark && device.is_cuda()},
                                             {"fused_optimizer", optimizer_impl_name(optimizer_impl)},
                                             {"cuda_graphs", cuda_graphs},
                                             {"train_data", data.train->description()},
                                             {"eval_data", data.eval->description()}});

  XPUPERF_EVENT(perflog_event::kTrainStart, nullptr);
  model->train();
  std::int64_t global_step = 0, trained_samples = 0, epoch = 0;
  double train_seconds = 0;  // time in training steps only, evaluation excluded
  std::map<std::string, double> metrics;
  std::int64_t metrics_step = -1;
  bool converged = false;
  StopReason reason = StopReason::MaxEpochs;
  bool stop = false;
  double last_loss = std::nan("");
  std::vector<torch::Tensor> loss_curve;  // one loss a step, on the device, when recorded
  // The steady state: steps after the first timing_skip_steps (CUDA graph capture, allocator and
  // cuDNN warm-up), for sweeps that compare strategies.
  double timed_seconds = 0;
  std::int64_t timed_samples = 0;
  // Device work still queued counts as training time, also when an evaluation or the end waits for it.
  const auto settle = [&] {
    const auto t = Clock::now();
    synchronize(device);
    const double pending = seconds_since(t);
    train_seconds += pending;
    if (global_step > timing_skip_steps) timed_seconds += pending;
  };

  // With pipeline stages only the last holds metrics (its tensor-parallel place 0: the others copy it).
  const EvalRanks eval_ranks{data_dist, pipeline ? *dist : data_dist,
                             !pipeline || (pipeline->last() && (!tp || tp->rank() == 0)), pipeline.get()};
  auto run_eval = [&] {
    settle();
    metrics = evaluate(c, *model, *data.eval, eval_batch, device, precision, channels_last, eval_ranks);
    metrics_step = global_step;
    json value = {{"global_steps", global_step}, {"epoch", epoch}};
    for (const auto& [name, v] : metrics) value[name] = v;
    XPUPERF_EVENT(perflog_event::kEvaluate, value);
    auto it = metrics.find(target_metric);
    if (it == metrics.end())
      throw ConfigError("target_metric '" + target_metric + "' is not among the metrics the case reports");
    if (reached(it->second, target_value, target_mode)) {
      converged = true;
      reason = StopReason::TargetReached;
      stop = true;
    }
  };

  while (!stop && (max_epochs == 0 || epoch < max_epochs)) {
    XPUPERF_EVENT(perflog_event::kEpochBegin, {{"epoch", epoch}});
    train_plan.epoch = epoch;
    data.train->start_epoch(train_plan);
    auto log_start = Clock::now();
    std::int64_t log_samples = 0;
    std::int64_t batches_left = batches_per_epoch;
    while (!stop && batches_left >= accumulation) {  // an epoch's last, incomplete step is not taken
      const auto step_start = Clock::now();
      const double lr = scheduled_lr(schedule, base_lr, global_step, warmup, total_steps, steps_per_epoch, lr_gamma);
      optimizer->set_lr(lr);
      if (zero)
        zero->zero_grad();
      else
        optimizer->zero_grad();
      torch::Tensor loss;  // the step's loss: the mean over its micro-batches
      std::int64_t step_rows = 0;
      bool out_of_data = false;
      const auto forward = [&](const Batch& b) {
        AutocastScope autocast(device, precision);
        return c.forward_step(b);
      };
      const auto backward = [&](const torch::Tensor& l) {
        const torch::Tensor scaled = accumulation > 1 ? l / static_cast<double>(accumulation) : l;
        (scaler ? scaler->scale(scaled) : scaled).backward();
      };
      std::vector<Batch> pipelined;  // with pipeline stages, the step's micro-batches go in together
      for (std::int64_t micro = 0; micro < accumulation; ++micro) {
        auto next = data.train->next_batch();  // waiting for data counts as training time
        --batches_left;
        if (!next) {
          out_of_data = true;
          break;
        }
        Batch& batch = *next;
        step_rows += batch[0].size(0);
        to_device(batch, device, channels_last);
        if (pipeline) {
          pipelined.push_back(std::move(batch));
          continue;
        }
        const bool last = micro + 1 == accumulation;
        if (zero)
          zero->begin_backward(last);
        else
          data_dist.begin_step(last);
        const auto forward_backward = [&](const Batch& b) {
          torch::Tensor l = forward(b);
          backward(l);
          return l;
        };
        const torch::Tensor l = step_graph ? step_graph->run(batch, forward_backward) : forward_backward(batch);
        if (zero) zero->end_backward();
        const torch::Tensor part = accumulation > 1 ? l.detach() / static_cast<double>(accumulation) : l.detach();
        loss = loss.defined() ? loss + part : part;
      }
      if (out_of_data) break;  // the dataset gave fewer batches than it promised: end the epoch
      if (pipeline) {
        std::vector<torch::Tensor> shapes;
        for (const auto& b : pipelined) shapes.push_back(b[0]);
        loss = pipeline->train_step(
            shapes, [&](int m) { return forward(pipelined[static_cast<std::size_t>(m)]); },
            [&](int, const torch::Tensor& l) { backward(l); },
            [&](int m) { data_dist.begin_step(m + 1 == accumulation); });
      }
      // Gradients averaged over ranks (reduced during backward when overlapping); with ZeRO each
      // rank holds its shares' averages.
      if (!zero) data_dist.finish_step(params);
      if (pipeline) pipeline->sum_tied_gradients(tied_across_stages);
      // The same decision on every rank: ZeRO's ranks check their shares and agree on the result.
      const bool step_ok = !scaler || scaler->update(scaler->unscale_and_check(stepped, agree_on_inf));
      const bool log_now = log_freq > 0 && (global_step + 1) % log_freq == 0;
      torch::Tensor grad_norm;  // before clipping; logged with the loss (divergence shows in it first)
      if (step_ok) {
        if (clip_grad_norm > 0 || log_now)
          grad_norm = zero ? zero->gradient_norm()
                      : tp || pipeline
                          ? model_parallel_gradient_norm(
                                params, split_params, tp.get(), pipeline ? &pipeline->group() : nullptr,
                                pipeline && pipeline->last() && !pipeline->first() ? tied_across_stages
                                                                                   : std::vector<torch::Tensor>{})
                          : gradient_norm(params);
        if (clip_grad_norm > 0) clip_gradients(stepped, grad_norm, clip_grad_norm);
        optimizer->step();
        if (zero) zero->gather_parameters();
      }
      // The loss logged and recorded is the global batch's: the mean over the data-parallel ranks
      // (so layouts with more or fewer of them compare), from the last stage of each pipeline
      // (rank 0, which logs it, is a first stage).
      if ((log_now || record_loss_curve) && (pipeline || data_dist.world_size() > 1)) {
        auto shared = loss.detach().to(torch::kFloat).reshape({1});
        if (pipeline) pipeline->group().all_reduce_sum(shared);
        data_dist.all_reduce_sum(shared);
        loss = shared.reshape({}) / static_cast<double>(data_dist.world_size());
      }
      // A copy: with CUDA graphs the loss is the graph's output, which the next replay overwrites.
      if (record_loss_curve) loss_curve.push_back(loss.detach().reshape({1}).to(torch::kFloat, false, true));

      ++global_step;
      const std::int64_t batch_samples = step_rows * data_dist.world_size();
      trained_samples += batch_samples;
      log_samples += batch_samples;
      if (log_now) last_loss = loss.item<double>();  // synchronises, so the time below is real
      if (global_step == timing_skip_steps) {
        const double untimed = seconds_since(step_start);
        settle();  // the steps after this one are the steady state
        train_seconds += untimed;
      } else {
        train_seconds += seconds_since(step_start);
        if (global_step > timing_skip_steps) {
          timed_seconds += seconds_since(step_start);
          timed_samples += batch_samples;
        }
      }
      if (log_now) {
        const double elapsed = seconds_since(log_start);
        json value = {{"epoch", epoch},
                      {"global_steps", global_step},
                      {"num_trained_samples", trained_samples},
                      {"loss", last_loss},
                      {"lr", lr},
                      {"samples_per_second", static_cast<double>(log_samples) / elapsed}};
        if (tokens_per_sample > 0)
          value["tokens_per_second"] = static_cast<double>(log_samples * tokens_per_sample) / elapsed;
        if (grad_norm.defined()) value["grad_norm"] = grad_norm.item<double>();
        if (scaler) value["loss_scale"] = scaler->current_scale();
        XPUPERF_EVENT(perflog_event::kStepEnd, value);
        log_start = Clock::now();
        log_samples = 0;
      }
      if (eval_every_steps > 0 && global_step % eval_every_steps == 0) {
        run_eval();
        log_start = Clock::now();
      }
      if (stop) break;
      if (max_steps > 0 && global_step >= max_steps) {
        reason = StopReason::MaxSteps;
      } else if (max_samples > 0 && trained_samples >= max_samples) {
        reason = StopReason::MaxSamples;
      } else if (time_budget > 0 && train_seconds >= time_budget) {
        reason = StopReason::TimeBudget;
      } else {
        continue;
      }
      stop = true;
    }
    ++epoch;
    XPUPERF_EVENT(perflog_event::kEpochEnd, {{"epoch", epoch - 1}, {"global_steps", global_step}});
    if (!stop && eval_every_epochs > 0 && epoch % eval_every_epochs == 0 && metrics_step != global_step) run_eval();
  }
  settle();
  XPUPERF_EVENT(perflog_event::kTrainEnd, {{"global_steps", global_step}, {"reason", stop_reason_name(reason)}});
  if (metrics_step != global_step) run_eval();  // the final metric is always the final model's

  const std::string save = cfg.get_string("save_checkpoint", "");
  if (zero && !save.empty()) zero->gather_all();  // every rank: stage 3 keeps only shares of its blocks
  if (!save.empty() && leader) {
    torch::serialize::OutputArchive archive;
    model->save(archive);
    archive.save_to(save);
  }

  TrainingOutcome outcome;
  outcome.reason = reason;
  outcome.final_metrics = metrics;
  FinishedInfo& f = outcome.finished;
  f.e2e_time = seconds_since(info.started);
  f.init_time = init_time;
  f.raw_train_time = train_seconds;
  f.training_samples_per_second = train_seconds > 0 ? static_cast<double>(trained_samples) / train_seconds : 0.0;
  f.converged = converged;
  f.final_metric = FinalMetric{target_metric, metrics[target_metric], target_value};
  f.global_steps = global_step;
  f.num_trained_samples = trained_samples;
  f.extra = {{"epochs", epoch},
             {"stop_reason", stop_reason_name(reason)},
             {"world_size", info.env.world_size},
             {"precision", precision_name(precision)},
             {"global_batch_size", micro_batches_per_step * accumulation},
             {"accumulation_steps", accumulation},
             {"zero_stage", zero_stage},
             {"tensor_parallel", tensor_parallel},
             {"pipeline_parallel", pipeline_parallel},
             {"activation_checkpointing", checkpoint_activations},
             {"target_mode", target_mode}};
  // For MFU, which the report computes once it knows the chip's peak (vendors/<v>/specs.yaml).
  if (c.train_flops_per_sample() > 0) f.extra["train_flops_per_sample"] = c.train_flops_per_sample();
  if (tokens_per_sample > 0) {
    f.extra["tokens_per_sample"] = tokens_per_sample;
    f.extra["training_tokens_per_second"] =
        f.training_samples_per_second.value_or(0.0) * static_cast<double>(tokens_per_sample);
  }
  if (scaler) f.extra["skipped_steps"] = scaler->skipped_steps();
  // The most any rank held: ranks differ (pipeline stages, ZeRO's uneven shares), and one that runs
  // out of memory stops them all.
  if (double peak = peak_device_memory_mib(device); peak >= 0) {
    auto most = torch::tensor({peak}, torch::TensorOptions().dtype(torch::kDouble)).to(device);
    dist->all_reduce_max(most);
    f.extra["peak_device_memory_mib"] = most.item<double>();
  }
  if (step_graph) f.extra["cuda_graph_replays"] = step_graph->replays();
  if (timing_skip_steps > 0 && timed_seconds > 0) {
    f.extra["timing_skip_steps"] = timing_skip_steps;
    f.extra["steady_samples_per_second"] = static_cast<double>(timed_samples) / timed_seconds;
  }
  if (zero) f.extra["zero_owned_parameters"] = zero->owned_elements();
  if (record_loss_curve && !loss_curve.empty()) {
    const auto curve = torch::cat(loss_curve).cpu();
    f.extra["loss_curve"] = std::vector<float>(curve.data_ptr<float>(), curve.data_ptr<float>() + curve.numel());
  }
  // Files that did not decode were replaced by other samples; the count says how many.
  if (const std::int64_t skipped = data.train->skipped_samples() + data.eval->skipped_samples(); skipped > 0)
    f.extra["skipped_samples"] = skipped;
  XPUPERF_EVENT(perflog_event::kFinished, f.to_json());
  dist->barrier();  // no rank leaves while another still needs the group
#undef XPUPERF_EVENT
  return outcome;
}

}  // namespace xpuperf::train
