#include "xpuperf/train/runtime.h"

#include <cmath>
#include <filesystem>
#include <thread>

#include "xpuperf/core/host_memory.h"
#include "xpuperf/core/log.h"
#include "xpuperf/core/switch_spec.h"
#include "xpuperf/datasets/image_dataset.h"
#include "xpuperf/optim/optimizers.h"
#include "xpuperf/parallel/activation_checkpoint.h"
#include "xpuperf/parallel/lora.h"
#include "xpuperf/parallel/model_parallel.h"
#include "xpuperf/torchrt/compat.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/distributed.h"
#include "xpuperf/torchrt/vendor_runtime.h"
#include "xpuperf/torchrt/weights.h"
#include "xpuperf/train/divergence_watch.h"
#include "xpuperf/train/evaluation.h"
#include "xpuperf/train/gradient_sync.h"
#include "xpuperf/train/lr_schedule.h"
#include "xpuperf/train/run_setup.h"
#include "xpuperf/train/step_census.h"
#include "xpuperf/train/step_graph.h"
#include "xpuperf/train/step_precision.h"
#include "xpuperf/train/step_profile.h"
#include "xpuperf/train/step_schedule.h"
#include "xpuperf/train/training_settings.h"

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

namespace {

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The most device memory the allocator held in tensors at once, in MiB; -1 if the device's vendor
// does not say.
double peak_device_memory_mib(const torch::Device& device) {
  const double bytes = torchrt::peak_device_memory_bytes(device);
  return bytes < 0 ? -1 : bytes / (1 << 20);
}

bool reached(double value, double target, const std::string& mode) {
  return mode == "min" ? value <= target : value >= target;
}

// A micro-batch's forward and backward as the run asks: eagerly, or by replaying a device graph.
MicroBatchRunner make_runner(const TrainingSettings& s, const torch::Device& device,
                             const std::vector<torch::Tensor>& params, std::unique_ptr<StepGraph>& graph,
                             TrainingCase& c) {
  if (!s.cuda_graphs) return [](const Batch& b, const std::function<torch::Tensor(const Batch&)>& f) { return f(b); };
  const std::string where = s.where("cuda_graphs").str() + ": cuda_graphs: ";
  if (!StepGraph::available(device))
    throw ConfigError(where +
                      "graphs need a device whose vendor brings them (NVIDIA's plug-in brings CUDA graphs, "
                      "with a LibTorch built with CUDA; this run is on " +
                      device.str() + "); set cuda_graphs: false");
  graph = std::make_unique<StepGraph>(device, params);
  StepGraph* g = graph.get();
  return [g, &c](const Batch& b, const std::function<torch::Tensor(const Batch&)>& f) {
    // A replay that ran no forward_step (the capture's own replay follows the forward it recorded,
    // which the case has counted already).
    bool stepped = false;
    auto loss = g->run(b, [&](const Batch& batch) {
      stepped = true;
      return f(batch);
    });
    if (!stepped) c.micro_batch_replayed();
    return loss;
  };
}

// One training run: set up by the constructor, trained by train(), described by finish().
class TrainingRun {
 public:
  TrainingRun(TrainingCase& c, const Config& cfg, const RunInfo& info, std::ostream& out);
  void train();
  TrainingOutcome finish();

 private:
  void event(int line, const char* name, const json& value) {
    if (leader_) log_.log(name, value, "runtime.cpp", line);
  }
  bool step(std::int64_t& batches_left, Clock::time_point& log_start, std::int64_t& log_samples);
  // The step's micro-batches, forward and backward; counts the rows and the wait for the data. Null
  // when the data ran out.
  std::optional<torch::Tensor> run_micro_batches(std::int64_t& batches_left, std::int64_t& step_rows,
                                                 double& input_wait);
  // Gradients finished, unscaled, clipped and stepped; the norm before clipping, where it was taken.
  torch::Tensor update_weights(bool log_now);
  // Training time, and the steady state's after timing_skip_steps.
  void count_step_time(Clock::time_point step_start, std::int64_t batch_samples, double input_wait);
  void log_step(double lr, const torch::Tensor& grad_norm, Clock::time_point log_start, std::int64_t log_samples);
  // max_steps, max_samples or time_budget reached: stop_ and the reason.
  void check_stop_conditions();
  // The process group and the model-parallel groups (tensor, pipeline, expert), from the settings.
  void connect_ranks(const RunInfo& info);
  // An epoch's batches and steps, the schedule's total steps and warm-up; ConfigError when the data
  // has fewer samples a rank than one step.
  void plan_steps();
  // SUBMIT_INFO: the run's layout, switches and data.
  json submit_info() const;
  // save_checkpoint: the model (or its LoRA adapters) with every step's update, written by rank 0.
  void save_model();
  // FINISHED's parts: the run's switches, the precision, peak memory and steady-state rate, LoRA's
  // adapters.
  json describe_switches() const;
  void describe_performance(json& extra);
  json describe_lora() const;
  void run_eval();
  // Device work still queued counts as training time, also when an evaluation or the end waits for it.
  void settle();

  TrainingCase& c_;
  const RunInfo& info_;
  PerfLogWriter log_;
  const bool leader_;
  const Clock::time_point init_start_ = Clock::now();
  TrainingSettings s_;
  torch::Device device_{torch::kCPU};
  optim::OptimizerImpl optimizer_impl_ = optim::OptimizerImpl::Reference;
  std::int64_t accumulation_ = 1, micro_batches_per_step_ = 0;
  std::unique_ptr<torchrt::Distributed> dist_;
  parallel::ParallelGroups groups_;
  torchrt::Distributed* data_dist_ = nullptr;
  Datasets data_;
  std::shared_ptr<torch::nn::Module> model_;
  parallel::SplitModel split_;
  std::unique_ptr<GradientSync> sync_;
  std::unique_ptr<StepPrecision> precision_;
  std::unique_ptr<StepGraph> graph_;
  std::unique_ptr<StepSchedule> schedule_;
  std::unique_ptr<StepProfile> profile_;  // profile_steps > 0
  std::unique_ptr<StepCensus> census_;    // census_steps > 0
  EpochPlan train_plan_;
  std::int64_t tokens_per_sample_ = 0, batches_per_epoch_ = 0, steps_per_epoch_ = 0, total_steps_ = 0, warmup_ = 0;
  double init_time_ = 0;
  // Progress.
  std::int64_t global_step_ = 0, trained_samples_ = 0, epoch_ = 0;
  double train_seconds_ = 0;  // time in training steps only, evaluation excluded
  std::map<std::string, double> metrics_;
  std::int64_t metrics_step_ = -1;
  bool converged_ = false, stop_ = false;
  StopReason reason_ = StopReason::MaxEpochs;
  double last_loss_ = std::nan("");
  DivergenceWatch divergence_;
  std::vector<torch::Tensor> loss_curve_;  // one loss a step, on the device, when recorded
  // The steady state: steps after the first timing_skip_steps (CUDA graph capture, allocator and
  // cuDNN warm-up), for sweeps that compare strategies.
  double timed_seconds_ = 0;
  std::int64_t timed_samples_ = 0, timed_steps_ = 0;
  // Seconds the host waited in the training data's next_batch: since the last STEP_END, and over
  // the timed steps. A loader that cannot keep up shows here (the batches it made ahead while the
  // run started hide it from the step rate of a short run).
  double log_input_wait_ = 0, timed_input_wait_ = 0;
};

#define XPUPERF_EVENT(...) event(__LINE__, __VA_ARGS__)

TrainingRun::TrainingRun(TrainingCase& c, const Config& cfg, const RunInfo& info, std::ostream& out)
    : c_(c), info_(info), log_(out, info.env.rank), leader_(info.env.rank == 0) {
  log_.log(perflog_event::kInitStart, nullptr, "runtime.cpp", __LINE__);
  s_ = read_training_settings(cfg, info.env.world_size);
  device_ = prepare_process(cfg, s_, info);
  optimizer_impl_ = optim::parse_optimizer_impl(s_.optimizer, device_);

  connect_ranks(info);
  accumulation_ = s_.accumulation(info.env.world_size);
  micro_batches_per_step_ = s_.train_batch * s_.data_ranks(info.env.world_size);

  const CaseContext ctx{
      cfg, s_.switches, device_, data_dist_->rank(), data_dist_->world_size(), info.env.local_world_size};
  data_ = c.datasets(ctx);
  model_ = prepare_model(c, ctx, s_, info.case_name);
  dist_->broadcast_parameters(model_->parameters());  // the whole model, the same on every rank of the world
  split_ = parallel::split_model(*model_, groups_, cfg, info.case_name);

  // The strategies of the step, each chosen once.
  sync_ = make_gradient_sync({cfg, s_, optimizer_impl_, *model_, split_, groups_, *data_dist_, *dist_, info.case_name});
  precision_ = std::make_unique<StepPrecision>(device_, s_.precision, sync_->skips_on_device());
  schedule_ = make_step_schedule(groups_, split_, *data_dist_, accumulation_,
                                 make_runner(s_, device_, split_.params, graph_, c));

  if (s_.profile_steps > 0) {
    const char* trace = std::getenv("XPUPERF_PROFILE_TRACE");
    profile_ = std::make_unique<StepProfile>(
        s_.timing_skip_steps, s_.profile_steps,
        StepProfile::trace_path_of_rank(trace ? trace : "", info.env.rank, info.env.world_size));
  }

  if (s_.census_steps > 0) census_ = std::make_unique<StepCensus>(s_.census_steps, s_.timing_skip_steps);

  tokens_per_sample_ = c.tokens_per_sample();
  plan_steps();

  init_time_ = seconds_since(init_start_);
  log_.log(perflog_event::kInitEnd, {{"init_time", init_time_}}, "runtime.cpp", __LINE__);
  XPUPERF_EVENT(perflog_event::kSubmitInfo, submit_info());
}

void TrainingRun::connect_ranks(const RunInfo& info) {
  torchrt::DistributedOptions dist_options;
  dist_options.backend = s_.dist_backend;
  dist_options.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(s_.dist_timeout_s * 1000));
  dist_options.bucket_bytes = s_.bucket_bytes;
  dist_options.sum_low_precision_in_fp32 = s_.bf16_weights;
  dist_ = torchrt::Distributed::create(info.env, device_, dist_options);
  // Model parallelism: groups of `tensor_parallel` ranks share each sample's layers, pipelines of
  // `pipeline_parallel` such groups its blocks; data parallelism runs over the pipelines.
  groups_ =
      parallel::form_parallel_groups(*dist_, static_cast<int>(s_.tensor_parallel),
                                     static_cast<int>(s_.pipeline_parallel), static_cast<int>(s_.expert_parallel));
  data_dist_ = groups_.data ? groups_.data.get() : dist_.get();
}

void TrainingRun::plan_steps() {
  train_plan_.batch_size = s_.train_batch;
  train_plan_.train = true;
  train_plan_.rank = data_dist_->rank();
  train_plan_.world_size = data_dist_->world_size();
  train_plan_.seed = static_cast<std::uint64_t>(s_.seed);
  batches_per_epoch_ = data_.train->batches_in_epoch(train_plan_);
  steps_per_epoch_ = batches_per_epoch_ / accumulation_;
  if (steps_per_epoch_ <= 0)
    throw ConfigError("the training data (" + data_.train->description() +
                      ") has fewer samples per rank than one step (" + std::to_string(s_.train_batch * accumulation_) +
                      "); lower train_batch_size or global_batch_size, or use more data");
  total_steps_ = s_.max_steps > 0 ? s_.max_steps : s_.max_epochs * steps_per_epoch_;
  if (total_steps_ == 0) total_steps_ = steps_per_epoch_;  // only a sample or time limit: schedule over one epoch
  warmup_ = s_.warmup_steps + s_.warmup_epochs * steps_per_epoch_;
}

json TrainingRun::submit_info() const {
  json submit{{"case", info_.case_name},
              {"vendor", info_.vendor},
              {"world_size", info_.env.world_size},
              {"device", torchrt::device_text(device_.str())},
              {"dist_backend", dist_->backend()},
              {"train_batch_size", s_.train_batch},
              // What the run made of its switches: the batch over the ranks, the step it chose.
              {"global_batch_size", micro_batches_per_step_ * accumulation_},
              {"accumulation_steps", accumulation_},
              {"cudnn_benchmark", s_.cudnn_benchmark && device_.is_cuda()},
              {"fused_optimizer", optim::optimizer_impl_name(optimizer_impl_)},
              {"train_data", data_.train->description()},
              {"eval_data", data_.eval->description()}};
  for (const auto& spec : switch_specs())  // the switches declared to be in SUBMIT_INFO, as set
    if (spec.in_submit_info) submit[spec.key] = s_.switches.at(spec.key);
  // The plug-in that brought the device, where one did: its name and version belong to the result.
  if (const auto* vendor = torchrt::active_vendor(); vendor && !vendor->plugin_name.empty())
    submit["plugin"] = vendor->plugin_name + " " + vendor->plugin_version;
  return submit;
}

void TrainingRun::settle() {
  const auto t = Clock::now();
  torchrt::synchronize(device_);
  const double pending = seconds_since(t);
  train_seconds_ += pending;
  if (global_step_ > s_.timing_skip_steps) timed_seconds_ += pending;
}

void TrainingRun::run_eval() {
  settle();
  divergence_.check(global_step_);
  sync_->flush_optimizer();  // an update running beside the training (offload_overlap) is applied first
  // With pipeline stages only the last holds metrics (its tensor-parallel place 0: the others copy it).
  const auto& pipeline = groups_.pipeline;
  const EvalRanks ranks{*data_dist_, pipeline ? *dist_ : *data_dist_,
                        !pipeline || (pipeline->last() && (!groups_.tp || groups_.tp->rank() == 0)), pipeline.get(),
                        groups_.ep ? &groups_.ep->group() : nullptr};
  metrics_ = evaluate(c_, *model_, *data_.eval, s_.eval_batch, device_, s_.precision, s_.channels_last, ranks);
  metrics_step_ = global_step_;
  json value = {{"global_steps", global_step_}, {"epoch", epoch_}};
  for (const auto& [name, v] : metrics_) value[name] = v;
  XPUPERF_EVENT(perflog_event::kEvaluate, value);
  auto it = metrics_.find(s_.target_metric);
  // No metric at all: the evaluation had nothing to evaluate (a held-out split that came out empty).
  if (metrics_.empty())
    throw ConfigError("the evaluation gave no metrics: its data (" + data_.eval->description() + ") has " +
                      std::to_string(data_.eval->size()) +
                      " samples; give it more (a larger dataset, or more synthetic tokens or samples)");
  if (it == metrics_.end())
    throw ConfigError("target_metric '" + s_.target_metric + "' is not among the metrics the case reports");
  for (const auto& [name, v] : metrics_)
    if (!std::isfinite(v))
      throw RunFailed("the evaluation at step " + std::to_string(global_step_) + " gave " + name + " " +
                      std::to_string(v) +
                      ": the model's outputs are not finite, so the run has no result (it is "
                      "not reported as 'not converged'); lower lr, or check init_checkpoint and the data");
  if (reached(it->second, s_.target_value, s_.target_mode)) {
    converged_ = true;
    reason_ = StopReason::TargetReached;
    stop_ = true;
  }
}

void TrainingRun::train() {
  XPUPERF_EVENT(perflog_event::kTrainStart, nullptr);
  model_->train();
  while (!stop_ && (s_.max_epochs == 0 || epoch_ < s_.max_epochs)) {
    XPUPERF_EVENT(perflog_event::kEpochBegin, {{"epoch", epoch_}});
    train_plan_.epoch = epoch_;
    data_.train->start_epoch(train_plan_);
    auto log_start = Clock::now();
    std::int64_t log_samples = 0;
    log_input_wait_ = 0;
    std::int64_t batches_left = batches_per_epoch_;
    // An epoch's last, incomplete step is not taken.
    while (!stop_ && batches_left >= accumulation_)
      if (!step(batches_left, log_start, log_samples)) break;
    ++epoch_;
    XPUPERF_EVENT(perflog_event::kEpochEnd, {{"epoch", epoch_ - 1}, {"global_steps", global_step_}});
    if (!stop_ && s_.eval_every_epochs > 0 && epoch_ % s_.eval_every_epochs == 0 && metrics_step_ != global_step_)
      run_eval();
  }
  settle();
  XPUPERF_EVENT(perflog_event::kTrainEnd, {{"global_steps", global_step_}, {"reason", stop_reason_name(reason_)}});
  if (metrics_step_ != global_step_) run_eval();  // the final metric is always the final model's
}

// One step through the strategies; false when the epoch's data ran out before it was whole.
bool TrainingRun::step(std::int64_t& batches_left, Clock::time_point& log_start, std::int64_t& log_samples) {
  if (profile_ && profile_->starts_now(global_step_)) {
    settle();
    profile_->start();
  }
  if (census_) census_->before_step(global_step_);
  const auto step_start = Clock::now();
  const double lr =
      scheduled_lr(s_.lr_scheduler, s_.lr, global_step_, warmup_, total_steps_, steps_per_epoch_, s_.lr_gamma);
  sync_->set_lr(lr);
  sync_->zero_grad();
  std::int64_t step_rows = 0;
  double input_wait = 0;
  std::optional<torch::Tensor> step_loss = run_micro_batches(batches_left, step_rows, input_wait);
  if (!step_loss) return false;  // the dataset gave fewer batches than it promised: end the epoch
  const bool log_now = s_.log_freq > 0 && (global_step_ + 1) % s_.log_freq == 0;
  const torch::Tensor grad_norm = update_weights(log_now);
  // The loss logged and recorded is the global batch's (so layouts with more or fewer
  // data-parallel ranks compare).
  torch::Tensor loss = *step_loss;
  if (log_now || s_.record_loss_curve) loss = schedule_->global_loss(loss);
  // A copy: with CUDA graphs the loss is the graph's output, which the next replay overwrites.
  if (s_.record_loss_curve) loss_curve_.push_back(loss.detach().reshape({1}).to(torch::kFloat, false, true));

  ++global_step_;
  if (census_) census_->after_step(global_step_);
  divergence_.record(*step_loss, global_step_);
  const std::int64_t batch_samples = step_rows * data_dist_->world_size();
  trained_samples_ += batch_samples;
  log_samples += batch_samples;
  if (log_now) last_loss_ = loss.item<double>();  // synchronises, so the time below is real
  if (log_now) divergence_.check_logged(last_loss_, global_step_);
  count_step_time(step_start, batch_samples, input_wait);
  if (log_now) {
    log_step(lr, grad_norm, log_start, log_samples);
    log_start = Clock::now();
    log_samples = 0;
    log_input_wait_ = 0;
  }
  if (profile_ && profile_->ends_now(global_step_)) {
    settle();
    profile_->stop(global_step_);
  }
  if (s_.eval_every_steps > 0 && global_step_ % s_.eval_every_steps == 0) {
    run_eval();
    log_start = Clock::now();
  }
  if (!stop_) check_stop_conditions();
  return true;
}

std::optional<torch::Tensor> TrainingRun::run_micro_batches(std::int64_t& batches_left, std::int64_t& step_rows,
                                                            double& input_wait) {
  const NextBatch next = [&]() -> std::optional<Batch> {
    const auto asked = Clock::now();
    auto batch = data_.train->next_batch();  // waiting for data counts as training time
    input_wait += seconds_since(asked);
    --batches_left;
    if (!batch) return std::nullopt;
    step_rows += (*batch)[0].size(0);
    to_device(*batch, device_, s_.channels_last);
    return batch;
  };
  const MicroStep micro{[&](const Batch& b) {
                          const auto autocast = precision_->autocast();
                          return c_.forward_step(b);
                        },
                        [&](const torch::Tensor& l) {
                          const torch::Tensor scaled = accumulation_ > 1 ? l / static_cast<double>(accumulation_) : l;
                          precision_->scale(scaled).backward();
                        }};
  return schedule_->run(next, micro, *sync_);
}

torch::Tensor TrainingRun::update_weights(bool log_now) {
  // Gradients averaged over ranks (reduced during backward when overlapping); with ZeRO each rank
  // holds its shares' averages. The same decision on every rank about a step to skip.
  sync_->finish_step();
  schedule_->finish_gradients();
  const StepGate gate = precision_->unscale_and_update(sync_->stepped(), sync_->overflow_agreement());
  torch::Tensor grad_norm;  // before clipping; logged with the loss (divergence shows in it first)
  if (gate.run) {
    if (s_.clip_grad_norm > 0 || log_now) grad_norm = sync_->gradient_norm();
    if (s_.clip_grad_norm > 0 && !sync_->clip_in_step(grad_norm, s_.clip_grad_norm))
      optim::clip_gradients(sync_->stepped(), grad_norm, s_.clip_grad_norm);
    sync_->step(gate.found_inf);
  }
  return grad_norm;
}

void TrainingRun::count_step_time(Clock::time_point step_start, std::int64_t batch_samples, double input_wait) {
  if (global_step_ == s_.timing_skip_steps) {
    const double untimed = seconds_since(step_start);
    settle();  // the steps after this one are the steady state
    train_seconds_ += untimed;
  } else {
    train_seconds_ += seconds_since(step_start);
    if (global_step_ > s_.timing_skip_steps) {
      timed_seconds_ += seconds_since(step_start);
      timed_samples_ += batch_samples;
      ++timed_steps_;
      timed_input_wait_ += input_wait;
    }
  }
  log_input_wait_ += input_wait;
}

void TrainingRun::log_step(double lr, const torch::Tensor& grad_norm, Clock::time_point log_start,
                           std::int64_t log_samples) {
  const double elapsed = seconds_since(log_start);
  json value = {{"epoch", epoch_},
                {"global_steps", global_step_},
                {"num_trained_samples", trained_samples_},
                {"loss", last_loss_},
                {"lr", lr},
                {"samples_per_second", static_cast<double>(log_samples) / elapsed},
                {"input_wait_share", log_input_wait_ / elapsed}};
  if (tokens_per_sample_ > 0)
    value["tokens_per_second"] = static_cast<double>(log_samples * tokens_per_sample_) / elapsed;
  if (grad_norm.defined()) value["grad_norm"] = grad_norm.item<double>();
  precision_->describe_step(value);
  std::map<std::string, double> counters;
  c_.step_counters(counters);
  for (const auto& [name, count] : counters) value[name] = count;
  XPUPERF_EVENT(perflog_event::kStepEnd, value);
}

void TrainingRun::check_stop_conditions() {
  if (s_.max_steps > 0 && global_step_ >= s_.max_steps) {
    reason_ = StopReason::MaxSteps;
  } else if (s_.max_samples > 0 && trained_samples_ >= s_.max_samples) {
    reason_ = StopReason::MaxSamples;
  } else if (s_.time_budget > 0 && train_seconds_ >= s_.time_budget) {
    reason_ = StopReason::TimeBudget;
  } else {
    return;
  }
  stop_ = true;
}

void TrainingRun::save_model() {
  sync_->flush_optimizer();       // every step's update in the weights that are saved and reported
  sync_->write_master_weights();  // bf16_weights: the fp32 masters, not their bf16 copies
  if (!s_.save_checkpoint.empty()) sync_->gather_all();  // every rank: ZeRO-3 keeps only shares of its blocks
  if (!s_.save_checkpoint.empty() && leader_) {
    if (s_.lora_rank > 0) {
      // The adapters alone, as PEFT saves them (a folder), for Hugging Face to load on the base model.
      parallel::save_lora_adapters(*model_, lora_settings(s_), s_.save_checkpoint, c_.peft_task_type());
    } else {
      try {
        torchrt::save_archive(*model_, s_.save_checkpoint);
      } catch (const std::runtime_error& e) {
        throw ConfigError(std::string("save_checkpoint: ") + e.what());
      }
    }
  }
}

json TrainingRun::describe_switches() const {
  json extra = {{"epochs", epoch_},
                {"stop_reason", stop_reason_name(reason_)},
                {"world_size", info_.env.world_size},
                {"global_batch_size", micro_batches_per_step_ * accumulation_},
                {"accumulation_steps", accumulation_},
                {"target_mode", s_.target_mode}};
  for (const auto& spec : switch_specs())  // the switches declared to be in FINISHED, as set
    if (spec.in_finished) extra[spec.key] = s_.switches.at(spec.key);
  return extra;
}

void TrainingRun::describe_performance(json& extra) {
  precision_->describe(extra);
  // The most any rank held: ranks differ (pipeline stages, ZeRO's uneven shares), and one that runs
  // out of memory stops them all.
  if (double peak = peak_device_memory_mib(device_); peak >= 0) {
    auto most = torch::tensor({peak}, torch::TensorOptions().dtype(torch::kDouble)).to(device_);
    dist_->all_reduce_max(most);
    extra["peak_device_memory_mib"] = most.item<double>();
  }
  if (graph_) extra["cuda_graph_replays"] = graph_->replays();
  if (s_.timing_skip_steps > 0 && timed_seconds_ > 0) {
    extra["timing_skip_steps"] = s_.timing_skip_steps;
    extra["steady_samples_per_second"] = static_cast<double>(timed_samples_) / timed_seconds_;
    extra["steady_input_wait_share"] = timed_input_wait_ / timed_seconds_;
  }
}

json TrainingRun::describe_lora() const {
  const auto adapters = parallel::lora_tensors(*model_);  // A and B of each adapted layer
  std::int64_t adapter = 0, frozen = 0;
  for (const auto& [name, t] : adapters) adapter += t.numel();
  for (const auto& p : model_->parameters())
    if (!p.requires_grad()) frozen += p.numel();
  const auto layers = static_cast<std::int64_t>(adapters.size()) / 2;
  return {{"rank", s_.lora_rank},     {"alpha", s_.lora_alpha},        {"targets", s_.lora_targets},
          {"adapted_layers", layers}, {"trained_parameters", adapter}, {"frozen_parameters", frozen}};
}

TrainingOutcome TrainingRun::finish() {
  if (profile_ && profile_->running()) profile_->stop(global_step_);  // the run ended inside the window
  if (census_) census_->finish(global_step_);
  save_model();

  TrainingOutcome outcome;
  outcome.reason = reason_;
  outcome.final_metrics = metrics_;
  FinishedInfo& f = outcome.finished;
  f.e2e_time = seconds_since(info_.started);
  f.init_time = init_time_;
  f.raw_train_time = train_seconds_;
  f.training_samples_per_second = train_seconds_ > 0 ? static_cast<double>(trained_samples_) / train_seconds_ : 0.0;
  f.converged = converged_;
  f.final_metric = FinalMetric{s_.target_metric, metrics_[s_.target_metric], s_.target_value};
  f.global_steps = global_step_;
  f.num_trained_samples = trained_samples_;
  f.extra = describe_switches();
  // For MFU, which the report computes once it knows the chip's peak (vendors/<v>/specs.yaml).
  if (c_.train_flops_per_sample() > 0) f.extra["train_flops_per_sample"] = c_.train_flops_per_sample();
  if (tokens_per_sample_ > 0) {
    f.extra["tokens_per_sample"] = tokens_per_sample_;
    f.extra["training_tokens_per_second"] =
        f.training_samples_per_second.value_or(0.0) * static_cast<double>(tokens_per_sample_);
  }
  describe_performance(f.extra);
  sync_->describe(f.extra);
  if (profile_) profile_->describe(f.extra);
  if (census_)
    f.extra["operator_census"] =
        census_->describe(info_.case_name + " on " + torchrt::device_text(device_.str()), timed_seconds_, timed_steps_);
  if (s_.lora_rank > 0) f.extra["lora"] = describe_lora();
  if (s_.record_loss_curve && !loss_curve_.empty()) {
    const auto curve = torch::cat(loss_curve_).cpu();
    f.extra["loss_curve"] = std::vector<float>(curve.data_ptr<float>(), curve.data_ptr<float>() + curve.numel());
  }
  // Files that did not decode were replaced by other samples; the count says how many.
  if (const std::int64_t skipped = data_.train->skipped_samples() + data_.eval->skipped_samples(); skipped > 0)
    f.extra["skipped_samples"] = skipped;
  XPUPERF_EVENT(perflog_event::kFinished, f.to_json());
  dist_->barrier();  // no rank leaves while another still needs the group
  return outcome;
}

#undef XPUPERF_EVENT

}  // namespace

TrainingOutcome run_training(TrainingCase& c, const Config& cfg, const RunInfo& info, std::ostream& out) {
  TrainingRun run(c, cfg, info, out);
  run.train();
  return run.finish();
}

}  // namespace xpuperf::train
