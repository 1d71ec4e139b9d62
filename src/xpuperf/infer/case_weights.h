#pragma once
// The weights an inference case runs with, and the caveats its results carry.

#include <torch/torch.h>

#include <map>
#include <string>

#include "xpuperf/infer/inference_case.h"

namespace xpuperf::infer {

// What every case's create_model does with the model it built: loads `checkpoint` (the engine's
// file), else the config's `checkpoint:`, into it (torchrt::load_weights: a LibTorch archive or a
// Python state_dict; `tied`: copies the file may hold, alias → the model's name), puts it on the
// case's device in eval mode, and returns ""; or, with no file, keeps the random weights and
// returns their caveat, ending with `how_to_give` (what to set `checkpoint:` to). A file that
// does not load is a ConfigError naming `checkpoint`.
std::string load_case_weights(torch::nn::Module& model, const InferContext& ctx, const std::string& checkpoint,
                              const std::string& how_to_give, const std::map<std::string, std::string>& tied = {});

// `caveat` and `more`, joined with "; " when both are there.
std::string join_caveats(const std::string& caveat, const std::string& more);

}  // namespace xpuperf::infer
