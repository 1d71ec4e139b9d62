#pragma once
// The weights an inference case runs with, and the caveats its results carry.

#include <torch/torch.h>

#include <map>
#include <string>

namespace xpuperf::infer {

// Loads `path` into `model` (train::load_weights: a LibTorch archive or a Python state_dict;
// `tied`: copies the file may hold, alias → the model's name) and returns ""; or, with no path,
// leaves the random weights and returns their caveat, ending with `how_to_give` (what to set
// `checkpoint:` to). A file that does not load is a ConfigError naming `checkpoint`.
std::string load_case_weights(torch::nn::Module& model, const std::string& path, const std::string& how_to_give,
                              const std::map<std::string, std::string>& tied = {});

// `caveat` and `more`, joined with "; " when both are there.
std::string join_caveats(const std::string& caveat, const std::string& more);

}  // namespace xpuperf::infer
