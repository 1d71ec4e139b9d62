#pragma once
// Loads a model's weights from the formats a user has: a LibTorch archive (module->save, as
// `xpuperf train --set save_checkpoint=F` writes), a PyTorch state_dict saved in Python
// (torch.save(dict(model.state_dict()), F)), or Hugging Face's safetensors (save_pretrained's
// model.safetensors, or a sharded checkpoint's model.safetensors.index.json with its shards beside
// it; the path's ending says which). Names and shapes must match the module's exactly; any
// missing, unexpected or mis-shaped entry is an error that names it.

#include <torch/torch.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace xpuperf::torchrt {

// Saves `model` as a LibTorch archive (what load_weights reads back) through a new file beside
// `path` and a rename, so that a symbolic link at `path` is replaced, never written through; throws
// std::runtime_error naming `path` when it cannot be written.
void save_archive(torch::nn::Module& model, const std::string& path);

// Renames a PyTorch state_dict saved in another project's names to the model's, in place, before
// it is matched (CPM-1's Megatron names for the GPT model); returns what it converted from, or ""
// when the file is not in that layout and stays as it is.
using StateDictConversion = std::function<std::string(std::map<std::string, torch::Tensor>&)>;

// Returns which format it read ("LibTorch archive", "PyTorch state_dict" or "safetensors", with the layout
// `convert` converted from); throws std::runtime_error saying what does not match. `tied`: names a
// state_dict may hold as copies of a tied parameter (alias → the model's name); each must equal
// the tensor it copies.
std::string load_weights(torch::nn::Module& model, const std::string& path,
                         const std::map<std::string, std::string>& tied = {}, const StateDictConversion& convert = {});

// What load_pretrained did: the model's tensors it filled, those it left as initialised (not in the
// file: a new head), and the file's tensors the model has no place for (a pre-training head; listed
// for a state_dict, not for a LibTorch archive).
struct PretrainedLoad {
  std::string format;
  std::vector<std::string> loaded, fresh, unused;
};

// A pretrained model's weights into a model with other parts (a fine-tuning head in place of the
// pre-training one): every tensor whose name the model has is loaded; a name that matches with
// another shape, or a file with no name in common, is an error that says so.
PretrainedLoad load_pretrained(torch::nn::Module& model, const std::string& path,
                               const std::map<std::string, std::string>& tied = {},
                               const StateDictConversion& convert = {});

}  // namespace xpuperf::torchrt
