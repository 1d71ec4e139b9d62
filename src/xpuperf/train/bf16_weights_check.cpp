// The check of the bf16_weights switch (optimizers.h): torch-free, so that `xpuperf check` and
// `xpuperf run` refuse a config that cannot run without loading LibTorch (core/training_switches.h).

#include <string>

#include "xpuperf/core/switch_spec.h"
#include "xpuperf/core/training_switches.h"

namespace xpuperf::train {
namespace {

void check_bf16_weights(const SwitchCheckInput& in, Diagnostics& diags) {
  if (!in.get_bool("bf16_weights", false)) return;
  const auto where = in.source("bf16_weights");
  const std::string precision = in.get_string("precision", "fp32");
  if (precision != "bf16")
    diags.error(where, "bf16_weights: keeps the weights of products in bf16, which precision: " + precision +
                           " does not compute in; set precision: bf16 or bf16_weights: false");
  const std::string optimizer = in.get_string("optimizer", "sgd");
  if (optimizer != "adam" && optimizer != "adamw")
    diags.error(where, "bf16_weights: the fp32 master weights are Adam's and AdamW's; optimizer " + optimizer +
                           " has none (use adam or adamw, or bf16_weights: false)");
  const std::string fused = in.get_string("fused_optimizer", "off");
  if (fused != "fused" && fused != "true" && fused != "foreach")
    diags.error(in.source("fused_optimizer"),
                "fused_optimizer: " + fused +
                    " is torch::optim's step, which updates the weights themselves; bf16_weights needs the step that "
                    "keeps masters: fused (CUDA) or foreach");
  const std::string not_yet = "bf16_weights: not yet with ";
  const auto refuse = [&](const std::string& key, const std::string& why, const std::string& instead) {
    diags.error(in.source(key), not_yet + key + " (" + why + "); set " + instead + " or bf16_weights: false");
  };
  if (in.get_bool("offload_optimizer", false))
    refuse("offload_optimizer", "it keeps its own masters on the host, and its weights are bf16 already",
           "offload_optimizer: false");
  if (in.get_int("lora_rank", 0) > 0)
    refuse("lora_rank", "LoRA freezes the base weights in bf16 already", "lora_rank: 0");
  if (in.get_int("zero_stage", 0) > 0) refuse("zero_stage", "its shares are of the masters", "zero_stage: 0");
  for (const char* key : {"tensor_parallel", "pipeline_parallel"})
    if (in.get_int(key, 1) > 1) refuse(key, "its gradients would be reduced in bf16", std::string(key) + ": 1");
  const std::int64_t global = in.get_int("global_batch_size", 0), micro = in.get_int("train_batch_size", 0);
  if (global > 0 && micro > 0 && global != micro * in.world_size)
    refuse("global_batch_size",
           "accumulating " + std::to_string(global / (micro * in.world_size)) +
               " micro-batches would add the gradients in bf16",
           "global_batch_size: " + std::to_string(micro * in.world_size));
}

const bool bf16_weights_check_registered = register_switch_check("bf16_weights", check_bf16_weights);

const bool bf16_weights_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "bf16_weights";
  s.type = SwitchType::Bool;
  s.default_value = "false";
  s.doc =
      "the products' weights in bf16, fp32 masters in the optimizer (precision: bf16; fused_optimizer: fused or "
      "foreach; Adam)";
  s.not_yet_with = {"offload_optimizer", "lora_rank",         "zero_stage",
                    "tensor_parallel",   "pipeline_parallel", "global_batch_size"};
  s.in_submit_info = true;
  s.in_finished = true;
  return s;
}());

}  // namespace
}  // namespace xpuperf::train
