#pragma once
// What a training case's model can be split into, declared beside the case's config
// (cases/training/<model>/<framework>/model_splits.yaml): the config keys whose sizes
// `tensor_parallel` must divide (attention heads, MLP units) and those `pipeline_parallel` must
// divide (blocks). With it, `xpuperf check` refuses a split the model cannot make, naming the key
// and the model's size, before any rank starts; core/ itself knows no model's keys, and no
// LibTorch code is needed to check a plan. A case without the file is checked when its ranks split
// the model.
//
//   tensor_parallel:        # the model has tensor-parallel layers
//     n_head: attention heads
//   pipeline_parallel:      # its blocks split into stages
//     n_layer: blocks
//   lora_layers: [c_attn, c_fc, c_proj]   # the linear layers LoRA can adapt (lora_targets)
//
// A parallelism the file leaves out is one the model cannot do; `{}` declares neither.

#include <optional>
#include <string>
#include <vector>

#include "xpuperf/core/diagnostics.h"
#include "xpuperf/core/repo.h"

namespace xpuperf {

struct ModelSize {
  std::string key;   // the config key that holds the size: "n_head"
  std::string what;  // what it counts, for the message: "attention heads"
};

struct ModelSplits {
  bool tensor_parallel = false;             // the model has tensor-parallel layers
  std::vector<ModelSize> tensor_divides;    // sizes a tensor-parallel group's size must divide
  bool pipeline_parallel = false;           // the model's blocks split into stages
  std::vector<ModelSize> pipeline_divides;  // sizes the number of stages must divide
  // The last name parts of the layers LoRA can adapt; nothing when the file does not say.
  std::optional<std::vector<std::string>> lora_layers;
};

// The case's model_splits.yaml; nothing when the case has none. A file that does not say what
// the format above says is reported to `diags`, naming the file, line and key.
std::optional<ModelSplits> load_model_splits(const Repo& repo, const std::string& model, const std::string& framework,
                                             Diagnostics& diags);

}  // namespace xpuperf
