// The check of a switch whose strategy is model_parallel.cpp: torch-free, so that `xpuperf check`
// and `xpuperf run` refuse a config that cannot run without loading LibTorch (core/training_switches.h).

#include <algorithm>
#include <string>

#include "xpuperf/core/switch_spec.h"
#include "xpuperf/core/training_switches.h"

namespace xpuperf::parallel {
namespace {

// Why the case's model cannot be split `parts` ways by `key` (tensor_parallel or pipeline_parallel);
// "" when it can, or when the case declared nothing (its ranks check then, in split_model).
std::string model_refuses(const SwitchCheckInput& in, const std::string& key, std::int64_t parts) {
  if (!in.splits || parts <= 1) return "";
  const bool tensor = key == "tensor_parallel";
  if (!(tensor ? in.splits->tensor_parallel : in.splits->pipeline_parallel))
    return "'" + key + "' " + std::to_string(parts) + ": the model of this case has no " +
           (tensor ? "layers to split" : "blocks to split into stages");
  for (const auto& size : tensor ? in.splits->tensor_divides : in.splits->pipeline_divides) {
    const std::int64_t value = in.get_int(size.key, 0);
    if (value > 0 && value % parts != 0)
      return "'" + key + "' " + std::to_string(parts) + " does not divide the model's " + std::to_string(value) + " " +
             size.what + " (" + size.key + ")";
  }
  return "";
}

// `tensor_parallel` and `pipeline_parallel`: the rank layout fits the world and the model.
void check_model_parallel(const SwitchCheckInput& in, Diagnostics& diags) {
  const bool saves = !in.get_string("save_checkpoint", "").empty();
  const std::int64_t tensor = in.get_int("tensor_parallel", 1), world = in.world_size;
  if (tensor < 1) {
    // said by its declaration's value check
  } else if (world % tensor != 0)
    diags.error(
        in.source("tensor_parallel"),
        "'tensor_parallel' " + std::to_string(tensor) + " does not divide the " + std::to_string(world) + " ranks",
        "groups of tensor_parallel ranks split each layer; data parallelism runs over the groups");
  else if (const std::string why = model_refuses(in, "tensor_parallel", tensor); !why.empty())
    diags.error(in.source("tensor_parallel"), why, "set tensor_parallel to a size the model divides into, or 1");
  else if (tensor > 1 && saves)
    diags.error(in.source("save_checkpoint"),
                "save_checkpoint with tensor_parallel is not implemented yet (each rank holds a part)");
  // Llama's parts tensor parallelism cannot split yet (the llama case's keys).
  if (tensor > 1 && in.get_bool("tie_word_embeddings", false))
    diags.error(in.source("tensor_parallel"),
                "tensor_parallel with tie_word_embeddings: true: the split embedding's vocabulary rows would be "
                "the output layer's too",
                "tensor_parallel: 1, or a shape with its own output layer (tie_word_embeddings: false)");
  if (tensor > 1 && in.get_int("num_local_experts", 0) > 0)
    diags.error(in.source("tensor_parallel"),
                "tensor_parallel with num_local_experts: splitting the experts' layers is not built",
                "tensor_parallel: 1 (expert parallelism is the experts' way)");
  const std::int64_t pipeline = in.get_int("pipeline_parallel", 1);
  if (in.get_bool("sequence_parallel", false)) {
    if (tensor <= 1)
      diags.error(
          in.source("sequence_parallel"), "sequence_parallel needs tensor_parallel 2 or more",
          "it splits the tokens over tensor_parallel's groups: set tensor_parallel, or sequence_parallel: false");
  }
  const bool tensor_fits = tensor >= 1 && world % tensor == 0;
  if (pipeline < 1) {
    // said by its declaration's value check
  } else if (tensor_fits && world % in.model_ranks() != 0)
    diags.error(in.source("pipeline_parallel"),
                "'pipeline_parallel' " + std::to_string(pipeline) + " × tensor_parallel " + std::to_string(tensor) +
                    " does not divide the " + std::to_string(world) + " ranks",
                "each pipeline has pipeline_parallel stages of tensor_parallel ranks; data parallelism runs over "
                "the pipelines");
  else if (const std::string why = model_refuses(in, "pipeline_parallel", pipeline); !why.empty())
    diags.error(in.source("pipeline_parallel"), why,
                "set pipeline_parallel to a number of stages the model's blocks divide into, or 1");
  else if (pipeline > 1 && saves)
    diags.error(in.source("save_checkpoint"),
                "save_checkpoint with pipeline_parallel is not implemented yet (each stage holds its blocks)");
}

const bool model_parallel_check_registered = register_switch_check("model_parallel", check_model_parallel);
// Tensor × pipeline parallel ranks hold one copy of the model, when they divide the world.
const bool model_ranks_registered = register_model_ranks([](const SwitchCheckInput& in) -> std::int64_t {
  const std::int64_t tensor = in.get_int("tensor_parallel", 1), pipeline = in.get_int("pipeline_parallel", 1);
  if (tensor < 1 || in.world_size % tensor != 0) return 1;
  return tensor * std::max<std::int64_t>(pipeline, 1);
});

const bool tensor_parallel_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "tensor_parallel";
  s.type = SwitchType::Int;
  s.default_value = "1";
  s.min = 1;
  s.unit = "ranks";
  s.doc = "Megatron's tensor parallelism: groups of this many ranks split each block's attention heads and MLP units";
  s.sweep_token = "tp";
  s.in_submit_info = true;
  s.in_finished = true;
  return s;
}());

const bool sequence_parallel_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "sequence_parallel";
  s.type = SwitchType::Bool;
  s.default_value = "false";
  s.doc =
      "Megatron's sequence parallelism within tensor_parallel's groups: the norms and the residual stream on a rank's "
      "share of the tokens, all-gathers and reduce-scatters in place of the all-reduces (llama, gpt2, cpm, bert)";
  s.sweep_token = "sp";
  s.in_submit_info = true;
  s.in_finished = true;
  return s;
}());

const bool pipeline_parallel_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "pipeline_parallel";
  s.type = SwitchType::Int;
  s.default_value = "1";
  s.min = 1;
  s.unit = "stages";
  s.doc = "pipeline stages of the model's blocks, micro-batches in Megatron's 1F1B order";
  s.sweep_token = "pp";
  s.in_submit_info = true;
  s.in_finished = true;
  return s;
}());

}  // namespace
}  // namespace xpuperf::parallel
