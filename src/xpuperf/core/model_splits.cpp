#include "xpuperf/core/model_splits.h"

#include <filesystem>

#include "xpuperf/core/config.h"

namespace xpuperf {
namespace {

// One parallelism's entry: a map of config key → what its size counts.
bool read_sizes(const Config& file, const std::string& parallelism, std::vector<ModelSize>& sizes, Diagnostics& diags) {
  const ConfigEntry* entry = file.find(parallelism);
  if (!entry) return false;
  if (entry->value.IsNull()) return true;
  if (!entry->value.IsMap()) {
    diags.error(entry->source, "'" + parallelism + "' must be a map of config keys to what they count",
                "e.g. " + parallelism + ": {n_head: attention heads}, or {} for no sizes");
    return true;
  }
  for (const auto& item : entry->value) {
    const std::string key = item.first.as<std::string>();
    if (!item.second.IsScalar() || item.second.as<std::string>().empty()) {
      diags.error(entry->source, "'" + parallelism + "." + key + "' must say what the size counts",
                  "e.g. " + key + ": attention heads");
      continue;
    }
    sizes.push_back({key, item.second.as<std::string>()});
  }
  return true;
}

}  // namespace

std::optional<ModelSplits> load_model_splits(const Repo& repo, const std::string& model, const std::string& framework,
                                             Diagnostics& diags) {
  const std::string path = repo.training_model_splits(model, framework);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  const auto file = load_config_file(path, diags);
  if (!file) return std::nullopt;
  for (const auto& key : file->keys())
    if (key != "tensor_parallel" && key != "pipeline_parallel" && key != "lora_layers") {
      const std::string near = closest_match(key, {"tensor_parallel", "pipeline_parallel", "lora_layers"});
      diags.error(file->at(key).source, "'" + key + "' is not what a model declares",
                  near.empty() ? "the keys are tensor_parallel, pipeline_parallel and lora_layers"
                               : "did you mean '" + near + "'?");
    }
  ModelSplits splits;
  splits.tensor_parallel = read_sizes(*file, "tensor_parallel", splits.tensor_divides, diags);
  splits.pipeline_parallel = read_sizes(*file, "pipeline_parallel", splits.pipeline_divides, diags);
  if (const ConfigEntry* layers = file->find("lora_layers")) {
    try {
      splits.lora_layers = file->get_string_list("lora_layers");
    } catch (const ConfigError& e) {
      diags.error(layers->source, e.what(), "e.g. lora_layers: [q_proj, k_proj, v_proj, o_proj]");
    }
  }
  return splits;
}

}  // namespace xpuperf
