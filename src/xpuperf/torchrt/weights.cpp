#include "xpuperf/torchrt/weights.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>

#include "xpuperf/core/files.h"
#include "xpuperf/torchrt/safetensors.h"

namespace xpuperf::torchrt {

namespace {

// A weights file must name a file: a folder is said to be one, not "missing".
void require_weights_file(const std::string& path) {
  if (std::filesystem::is_directory(path))
    throw std::runtime_error("weights file '" + path +
                             "' is a folder: give the file in it (model.safetensors, model.safetensors.index.json, "
                             "a LibTorch archive or a PyTorch state_dict)");
  if (!std::filesystem::is_regular_file(path)) throw std::runtime_error("weights file '" + path + "' does not exist");
}

// Loaded weights that are infinite or not a number would train to a "not converged" nan; a
// damaged checkpoint is said to be one, naming its first such tensor.
void require_finite(const std::string& path, const std::vector<std::pair<std::string, torch::Tensor>>& loaded) {
  std::size_t bad_tensors = 0;
  std::string first;
  std::int64_t first_count = 0;
  for (const auto& [name, t] : loaded) {
    if (!t.defined() || !t.is_floating_point()) continue;
    const std::int64_t count = t.isfinite().logical_not().sum().item<std::int64_t>();
    if (count == 0) continue;
    if (bad_tensors++ == 0) {
      first = name;
      first_count = count;
    }
  }
  if (bad_tensors > 0)
    throw std::runtime_error(path + ": " + first + " holds " + std::to_string(first_count) +
                             " values that are infinite or not a number" +
                             (bad_tensors > 1 ? " (and " + std::to_string(bad_tensors - 1) + " more tensors do)" : "") +
                             ": the checkpoint is damaged or was saved from a diverged run");
}

std::vector<std::pair<std::string, torch::Tensor>> model_tensors(const torch::nn::Module& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : model.named_parameters()) out.emplace_back(p.key(), p.value());
  for (const auto& b : model.named_buffers()) out.emplace_back(b.key(), b.value());
  return out;
}

std::string ordered_dict_advice(const std::string& path) {
  return path +
         " looks like torch.save(model.state_dict()): LibTorch cannot read the OrderedDict a state_dict is; save a "
         "plain dict instead: torch.save(dict(model.state_dict()), F)";
}

// A PyTorch state_dict: torch.save writes an OrderedDict of name → tensor, which LibTorch's
// unpickler reads as a generic dict.
std::map<std::string, torch::Tensor> read_state_dict(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const torch::IValue value = torch::pickle_load(bytes);
  if (value.isNone()) throw std::runtime_error(ordered_dict_advice(path));
  if (!value.isGenericDict()) throw std::runtime_error(path + " holds a " + value.tagKind() + ", not a state_dict");
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& item : value.toGenericDict()) {
    if (!item.key().isString() || !item.value().isTensor())
      throw std::runtime_error(path + ": a state_dict entry is not name → tensor");
    tensors[item.key().toStringRef()] = item.value().toTensor();
  }
  return tensors;
}

// Takes the tied copies out of `tensors`, once each is checked to equal what it copies.
void drop_tied_copies(std::map<std::string, torch::Tensor>& tensors, const std::map<std::string, std::string>& tied,
                      const std::string& path) {
  for (const auto& [alias, name] : tied) {
    const auto copy = tensors.find(alias);
    if (copy == tensors.end()) continue;
    const auto original = tensors.find(name);
    if (original == tensors.end()) continue;  // reported as missing below
    if (copy->second.sizes() != original->second.sizes() || !torch::equal(copy->second, original->second))
      throw std::runtime_error(path + ": " + alias + " differs from " + name +
                               ", but this model ties them (one tensor); the file's weights are not of this model");
    tensors.erase(copy);
  }
}

// The state_dict of a file that is not a LibTorch archive (`archive_error` says why), or an error
// saying what the file is not.
std::map<std::string, torch::Tensor> read_state_dict_not_archive(const std::string& path,
                                                                 const std::string& archive_error) {
  try {
    return read_state_dict(path);
  } catch (const c10::Error& e) {
    // LibTorch's unpickler reads Python's OrderedDict (what state_dict() returns) as None.
    if (std::string(e.what_without_backtrace()).find("GenericDict but got None") != std::string::npos)
      throw std::runtime_error(ordered_dict_advice(path));
    throw std::runtime_error(path + " is neither a LibTorch archive (" + archive_error.substr(0, 200) +
                             ") nor a PyTorch state_dict (" + std::string(e.what_without_backtrace()).substr(0, 200) +
                             ")");
  }
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Hugging Face's safetensors weights: one file (model.safetensors), or the index of a sharded
// checkpoint (model.safetensors.index.json, whose weight_map names each tensor's shard beside it).
// Empty when `path` is neither.
std::optional<std::map<std::string, torch::Tensor>> read_safetensors_weights(const std::string& path) {
  std::vector<std::string> files;
  if (ends_with(path, ".safetensors")) {
    files.push_back(path);
  } else if (ends_with(path, ".safetensors.index.json")) {
    std::ifstream in(path);
    nlohmann::json index;
    try {
      index = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(path + ": not a safetensors index (" + e.what() + ")");
    }
    if (!index.contains("weight_map") || !index["weight_map"].is_object())
      throw std::runtime_error(path + ": a safetensors index has a weight_map (tensor → shard file); this has none");
    std::set<std::string> shards;
    // Hugging Face's shards are plain file names beside the index; a path that leaves the folder
    // (../../etc/passwd) is not a checkpoint's.
    for (const auto& [name, shard] : index["weight_map"].items()) {
      if (!shard.is_string())
        throw std::runtime_error(path + ": weight_map[\"" + name + "\"] must name a shard file, got " +
                                 shard.dump().substr(0, 80));
      const auto file = shard.get<std::string>();
      if (file.empty() || file == "." || file == ".." || file.find('/') != std::string::npos)
        throw std::runtime_error(path + ": weight_map[\"" + name + "\"] names '" + file.substr(0, 200) +
                                 "', which is not a file name beside the index (shards sit in the index's folder, "
                                 "e.g. model-00001-of-00002.safetensors)");
      shards.insert(file);
    }
    const auto folder = std::filesystem::path(path).parent_path();
    for (const auto& shard : shards) files.push_back((folder / shard).string());
  } else {
    return std::nullopt;
  }
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& file : files)
    for (auto& [name, t] : read_safetensors(file))
      if (!tensors.emplace(name, std::move(t)).second)
        throw std::runtime_error(file + ": " + name + " is in two of the checkpoint's files");
  return tensors;
}

// The format's name, after `convert` has renamed the tensors where they are in its layout.
std::string converted(std::map<std::string, torch::Tensor>& tensors, const StateDictConversion& convert,
                      const std::string& format) {
  const std::string from = convert ? convert(tensors) : "";
  return from.empty() ? format : format + " in " + from + ", converted";
}

void copy_state_dict(torch::nn::Module& model, const std::map<std::string, torch::Tensor>& tensors,
                     const std::string& path) {
  std::map<std::string, torch::Tensor> targets;
  for (const auto& p : model.named_parameters()) targets[p.key()] = p.value();
  for (const auto& b : model.named_buffers()) targets[b.key()] = b.value();
  std::string problems;
  for (const auto& [name, target] : targets) {
    const auto it = tensors.find(name);
    if (it == tensors.end())
      problems += "\n  missing: " + name;
    else if (it->second.sizes() != target.sizes())
      problems += "\n  " + name + ": shape " + c10::str(it->second.sizes()) + " in the file, " +
                  c10::str(target.sizes()) + " in the model";
  }
  for (const auto& [name, tensor] : tensors)
    if (!targets.count(name)) problems += "\n  unexpected: " + name;
  if (!problems.empty()) throw std::runtime_error(path + " does not match the model:" + problems);
  const torch::NoGradGuard no_grad;
  for (auto& [name, target] : targets) target.copy_(tensors.at(name));
}

}  // namespace

void save_archive(torch::nn::Module& model, const std::string& path) {
  torch::serialize::OutputArchive archive;
  model.save(archive);
  const std::string temporary = temporary_beside(path);
  try {
    archive.save_to(temporary);
  } catch (const c10::Error& e) {
    std::remove(temporary.c_str());
    throw std::runtime_error(path + ": cannot be written (" + e.what_without_backtrace() + ")");
  }
  commit_file(temporary, path);
}

std::string load_weights(torch::nn::Module& model, const std::string& path,
                         const std::map<std::string, std::string>& tied, const StateDictConversion& convert) {
  require_weights_file(path);
  auto tensors = read_safetensors_weights(path);
  std::string format = "safetensors";
  if (!tensors) {
    std::string archive_error;
    try {
      torch::serialize::InputArchive archive;
      archive.load_from(path, torch::kCPU);
      model.load(archive);
      require_finite(path, model_tensors(model));
      return "LibTorch archive";
    } catch (const c10::Error& e) {
      archive_error = e.what_without_backtrace();
    }
    tensors = read_state_dict_not_archive(path, archive_error);
    format = "PyTorch state_dict";
  }
  format = converted(*tensors, convert, format);
  drop_tied_copies(*tensors, tied, path);
  copy_state_dict(model, *tensors, path);
  require_finite(path, model_tensors(model));
  return format;
}

namespace {

// The tensor `name` (dotted, as named_parameters spells it) of a LibTorch archive module->save
// wrote: a sub-archive a module, the tensor in the last one. Undefined when absent.
torch::Tensor archive_tensor(torch::serialize::InputArchive& root, const std::string& name, bool buffer) {
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const auto dot = name.find('.', start);
    parts.push_back(name.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  std::vector<torch::serialize::InputArchive> chain(1);
  torch::serialize::InputArchive* at = &root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    chain.emplace_back();
    if (!at->try_read(parts[i], chain.back())) return {};
    at = &chain.back();
  }
  torch::Tensor t;
  if (!at->try_read(parts.back(), t, buffer)) return {};
  return t;
}

}  // namespace

PretrainedLoad load_pretrained(torch::nn::Module& model, const std::string& path,
                               const std::map<std::string, std::string>& tied, const StateDictConversion& convert) {
  require_weights_file(path);
  struct Target {
    torch::Tensor tensor;
    bool buffer;
  };
  std::map<std::string, Target> targets;
  for (const auto& p : model.named_parameters()) targets[p.key()] = {p.value(), false};
  for (const auto& b : model.named_buffers()) targets[b.key()] = {b.value(), true};

  PretrainedLoad r;
  std::map<std::string, torch::Tensor> found;
  auto tensors = read_safetensors_weights(path);
  std::string format = "safetensors";
  if (!tensors) {
    try {
      torch::serialize::InputArchive archive;
      archive.load_from(path, torch::kCPU);
      for (const auto& [name, target] : targets)
        if (auto t = archive_tensor(archive, name, target.buffer); t.defined()) found[name] = t;
      r.format = "LibTorch archive";
    } catch (const c10::Error& e) {
      tensors = read_state_dict_not_archive(path, e.what_without_backtrace());
      format = "PyTorch state_dict";
    }
  }
  if (tensors) {
    r.format = converted(*tensors, convert, format);
    drop_tied_copies(*tensors, tied, path);
    for (auto& [name, t] : *tensors) {
      if (targets.count(name))
        found[name] = t;
      else
        r.unused.push_back(name);
    }
  }
  std::string problems;
  for (const auto& [name, t] : found)
    if (t.sizes() != targets.at(name).tensor.sizes())
      problems += "\n  " + name + ": shape " + c10::str(t.sizes()) + " in the file, " +
                  c10::str(targets.at(name).tensor.sizes()) + " in the model";
  if (!problems.empty()) throw std::runtime_error(path + " does not fit the model:" + problems);
  if (found.empty())
    throw std::runtime_error(path + " (a " + r.format + ") has no tensor this model names: not its pretrained weights");
  require_finite(path, {found.begin(), found.end()});
  const torch::NoGradGuard no_grad;
  for (auto& [name, target] : targets) {
    const auto it = found.find(name);
    if (it == found.end()) {
      r.fresh.push_back(name);
      continue;
    }
    target.tensor.copy_(it->second);
    r.loaded.push_back(name);
  }
  return r;
}

}  // namespace xpuperf::torchrt
