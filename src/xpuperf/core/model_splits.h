#pragma once
// What a training case's model can be split into, declared by the case in its own config keys: the
// sizes `tensor_parallel` must divide (attention heads, MLP units) and those `pipeline_parallel`
// must divide (blocks). With it, `xpuperf check` refuses a split the model cannot make, naming the
// key and the model's size, before any rank starts, while core/ itself knows no model's keys.
// A case that declares nothing is checked when its ranks split the model.

#include <string>
#include <vector>

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
};

// Called once by a case's file (a static registrar); returns true.
bool register_model_splits(const std::string& model, const std::string& framework, ModelSplits splits);
// What the case declared, or nullptr.
const ModelSplits* model_splits(const std::string& model, const std::string& framework);

}  // namespace xpuperf
