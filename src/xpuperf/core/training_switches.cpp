#include "xpuperf/core/training_switches.h"

#include <algorithm>
#include <set>

#include "xpuperf/core/training_limits.h"

namespace xpuperf {
namespace {

Source source_of(const Config& cfg, const std::string& key) {
  const ConfigEntry* e = cfg.find(key);
  return e ? e->source : Source{cfg.origin(), 0};
}

// A value of the wrong type is the merge's error to report; here it reads as the default.
template <typename Get>
auto value_or(Get get, decltype(get()) fallback) -> decltype(get()) {
  try {
    return get();
  } catch (const ConfigError&) {
    return fallback;
  }
}

// Why the case's model cannot be split `parts` ways by `key` (tensor_parallel or pipeline_parallel);
// "" when it can, or when the case declared nothing (its ranks check then).
std::string model_refuses(const Config& cfg, const ModelSplits* splits, const std::string& key, std::int64_t parts) {
  if (!splits || parts <= 1) return "";
  const bool tensor = key == "tensor_parallel";
  if (!(tensor ? splits->tensor_parallel : splits->pipeline_parallel))
    return "'" + key + "' " + std::to_string(parts) + ": the model of this case has no " +
           (tensor ? "layers to split" : "blocks to split into stages");
  for (const auto& size : tensor ? splits->tensor_divides : splits->pipeline_divides) {
    const std::int64_t value = value_or([&] { return cfg.get_int(size.key, 0); }, std::int64_t{0});
    if (value > 0 && value % parts != 0)
      return "'" + key + "' " + std::to_string(parts) + " does not divide the model's " + std::to_string(value) + " " +
             size.what + " (" + size.key + ")";
  }
  return "";
}

}  // namespace

std::string cuda_graphs_conflict(const Config& cfg, int world_size) {
  const auto get_int = [&](const std::string& key) {
    return value_or([&] { return cfg.get_int(key, 0); }, std::int64_t{0});
  };
  const std::int64_t micro = value_or([&] { return cfg.get_int("train_batch_size", 1); }, std::int64_t{1});
  const std::int64_t global = get_int("global_batch_size");
  if (world_size > 1)
    return "not yet with data parallelism (the gradient all-reduce is outside the graph); run one rank or set "
           "cuda_graphs: false";
  if (value_or([&] { return cfg.get_string("precision", "fp32"); }, std::string()) == "fp16")
    return "fp16's loss scaler decides on the host every step; use bf16 or cuda_graphs: false";
  if (global > 0 && global != micro * world_size)
    return "not with gradient accumulation (global_batch_size " + std::to_string(global) +
           " takes several micro-batches a step, and each replay would overwrite the gradients of the last); set "
           "global_batch_size: 0 or cuda_graphs: false";
  if (value_or([&] { return cfg.get_bool("activation_checkpointing", false); }, false))
    return "not with activation_checkpointing (its recomputation runs inside backward, which the graph cannot "
           "replay with the random state of each step); set one of them false";
  if (get_int("zero_stage") > 0)
    return "not with zero_stage (its collectives run from gradient hooks); set zero_stage: 0";
  return "";
}

void check_training_switches(const Config& cfg, int world_size, Diagnostics& diags, const ModelSplits* splits) {
  check_training_limits(cfg, diags);
  if (cfg.has("precision")) {
    static const std::set<std::string> kPrecisions = {"fp32", "tf32", "bf16", "fp16"};
    const std::string p = value_or([&] { return cfg.get_string("precision"); }, std::string());
    if (!kPrecisions.count(p))
      diags.error(source_of(cfg, "precision"), "'precision' must be fp32, tf32, bf16 or fp16, got '" + p + "'",
                  "fp32 keeps TF32 off; bf16 and fp16 are autocast (fp16 with a dynamic loss scaler)");
  }
  const std::int64_t stage = value_or([&] { return cfg.get_int("zero_stage", 0); }, std::int64_t{0});
  if (stage < 0 || stage > 3)
    diags.error(source_of(cfg, "zero_stage"), "'zero_stage' must be 0, 1, 2 or 3, got " + std::to_string(stage),
                "0: plain data parallelism; 1: optimizer state sharded; 2: and gradients; 3: and the blocks' "
                "parameters");
  const std::int64_t tensor = value_or([&] { return cfg.get_int("tensor_parallel", 1); }, std::int64_t{1});
  if (tensor < 1)
    diags.error(source_of(cfg, "tensor_parallel"), "'tensor_parallel' must be 1 or more, got " + std::to_string(tensor),
                "1: no tensor parallelism; N: groups of N ranks split each layer");
  else if (world_size % tensor != 0)
    diags.error(
        source_of(cfg, "tensor_parallel"),
        "'tensor_parallel' " + std::to_string(tensor) + " does not divide the " + std::to_string(world_size) + " ranks",
        "groups of tensor_parallel ranks split each layer; data parallelism runs over the groups");
  else if (const std::string why = model_refuses(cfg, splits, "tensor_parallel", tensor); !why.empty())
    diags.error(source_of(cfg, "tensor_parallel"), why, "set tensor_parallel to a size the model divides into, or 1");
  else if (tensor > 1 && stage > 0)
    diags.error(source_of(cfg, "zero_stage"), "zero_stage with tensor_parallel is not implemented yet",
                "use one of them");
  else if (tensor > 1 && !value_or([&] { return cfg.get_string("save_checkpoint", ""); }, std::string()).empty())
    diags.error(source_of(cfg, "save_checkpoint"),
                "save_checkpoint with tensor_parallel is not implemented yet (each rank holds a part)");
  const std::int64_t pipeline = value_or([&] { return cfg.get_int("pipeline_parallel", 1); }, std::int64_t{1});
  const bool tensor_fits = tensor >= 1 && world_size % tensor == 0;
  const std::int64_t model_ranks = tensor_fits ? tensor * std::max<std::int64_t>(pipeline, 1) : 1;
  if (pipeline < 1)
    diags.error(source_of(cfg, "pipeline_parallel"),
                "'pipeline_parallel' must be 1 or more, got " + std::to_string(pipeline),
                "1: no pipeline; N: N stages of the model's blocks");
  else if (tensor_fits && world_size % model_ranks != 0)
    diags.error(source_of(cfg, "pipeline_parallel"),
                "'pipeline_parallel' " + std::to_string(pipeline) + " × tensor_parallel " + std::to_string(tensor) +
                    " does not divide the " + std::to_string(world_size) + " ranks",
                "each pipeline has pipeline_parallel stages of tensor_parallel ranks; data parallelism runs over "
                "the pipelines");
  else if (const std::string why = model_refuses(cfg, splits, "pipeline_parallel", pipeline); !why.empty())
    diags.error(source_of(cfg, "pipeline_parallel"), why,
                "set pipeline_parallel to a number of stages the model's blocks divide into, or 1");
  else if (pipeline > 1 && stage > 0)
    diags.error(source_of(cfg, "zero_stage"), "zero_stage with pipeline_parallel is not implemented yet",
                "use one of them");
  else if (pipeline > 1 && !value_or([&] { return cfg.get_string("save_checkpoint", ""); }, std::string()).empty())
    diags.error(source_of(cfg, "save_checkpoint"),
                "save_checkpoint with pipeline_parallel is not implemented yet (each stage holds its blocks)");
  const std::int64_t data_ranks = world_size % model_ranks == 0 ? world_size / model_ranks : world_size;
  const std::int64_t micro = value_or([&] { return cfg.get_int("train_batch_size", 1); }, std::int64_t{1});
  const std::int64_t global = value_or([&] { return cfg.get_int("global_batch_size", 0); }, std::int64_t{0});
  if (global > 0 && micro > 0 && global % (micro * data_ranks) != 0)  // a negative one: check_training_limits
    diags.error(source_of(cfg, "global_batch_size"),
                "'global_batch_size' " + std::to_string(global) +
                    " is not a multiple of train_batch_size × data-parallel ranks = " + std::to_string(micro) + " × " +
                    std::to_string(data_ranks),
                "the micro-batches a step accumulates are global_batch_size / (train_batch_size × ranks); 0 "
                "accumulates none");
  if (value_or([&] { return cfg.get_bool("cuda_graphs", false); }, false)) {
    const std::string why = cuda_graphs_conflict(cfg, world_size);
    if (!why.empty()) diags.error(source_of(cfg, "cuda_graphs"), "cuda_graphs: " + why);
  }
}

}  // namespace xpuperf
