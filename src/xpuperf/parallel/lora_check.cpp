// The check of the LoRA switch (lora.h): torch-free, so that `xpuperf check` and `xpuperf run`
// refuse a config that cannot run without loading LibTorch (core/training_switches.h).

#include <algorithm>
#include <string>

#include "xpuperf/core/switch_spec.h"
#include "xpuperf/core/training_switches.h"

namespace xpuperf::parallel {
namespace {

void check_lora(const SwitchCheckInput& in, Diagnostics& diags) {
  if (in.get_int("lora_rank", 0) <= 0) return;  // below 0: said by its declaration's value check
  const double alpha = in.get_number("lora_alpha", 32);
  if (!(alpha > 0))
    diags.error(in.source("lora_alpha"), "lora_alpha must be positive (got " + std::to_string(alpha) + ")");
  const double dropout = in.get_number("lora_dropout", 0);
  if (dropout < 0 || dropout >= 1)
    diags.error(in.source("lora_dropout"), "lora_dropout must be in [0, 1) (got " + std::to_string(dropout) + ")");
  try {
    const auto targets = in.cfg.get_string_list("lora_targets");
    if (targets.empty())
      diags.error(in.source("lora_targets"), "lora_targets: name the layers to adapt, e.g. [q_proj, v_proj]");
    // The case's model_splits.yaml lists its adaptable layers; the model says the same when built.
    if (in.splits && in.splits->lora_layers) {
      const auto& layers = *in.splits->lora_layers;
      std::string known;
      for (const auto& l : layers) known += (known.empty() ? "" : ", ") + l;
      for (const auto& t : targets)
        if (std::find(layers.begin(), layers.end(), t) == layers.end())
          diags.error(in.source("lora_targets"), "lora_targets: no layer of the model is named '" + t + "'",
                      "its linear layers are " + (known.empty() ? "none" : known));
    }
  } catch (const ConfigError& e) {
    diags.error(in.source("lora_targets"), std::string("lora_targets: ") + e.what(),
                "a list of layer names, e.g. [q_proj, v_proj]");
  }
  const std::string why = " not yet with LoRA (the adapters are not split); set lora_rank: 0 or ";
  if (in.get_int("tensor_parallel", 1) > 1)
    diags.error(in.source("tensor_parallel"), "tensor_parallel:" + why + "tensor_parallel: 1");
  if (in.get_int("pipeline_parallel", 1) > 1)
    diags.error(in.source("pipeline_parallel"), "pipeline_parallel:" + why + "pipeline_parallel: 1");
  if (in.get_int("zero_stage", 0) == 3)
    diags.error(in.source("zero_stage"),
                "zero_stage: 3 shards the blocks' parameters, and LoRA freezes most of them: not yet together; use "
                "zero_stage 1 or 2 (the adapters' optimizer state is small) or lora_rank: 0");
}

const bool lora_check_registered = register_switch_check("lora", check_lora);

const bool lora_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "lora_rank";
  s.type = SwitchType::Int;
  s.default_value = "0";
  s.min = 0;
  s.doc = "LoRA: rank-r adapters on lora_targets trained, the rest frozen (0: every weight trains)";
  s.sweep_token = "lora";
  s.not_yet_with = {"tensor_parallel", "pipeline_parallel"};
  s.on_value = "8";
  return s;
}());

}  // namespace
}  // namespace xpuperf::parallel
