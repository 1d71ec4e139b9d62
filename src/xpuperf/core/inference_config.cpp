#include "xpuperf/core/inference_config.h"

#include <algorithm>
#include <filesystem>

namespace xpuperf {
namespace fs = std::filesystem;

const std::vector<std::string>& inference_shared_keys() {
  static const std::vector<std::string> keys = {
      "batch_size", "flops",  "fp16",          "compiler",        "num_workers",
      "log_freq",   "repeat", "no_validation", "exist_onnx_path", "exist_compiler_path"};
  return keys;
}

namespace {

bool contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

void check_plan_collisions(const Config& config, const std::vector<std::string>& plan_keys, Diagnostics& diags) {
  for (const auto& key : config.keys()) {
    if (contains(plan_keys, key))
      diags.error(config.at(key).source, "'" + key + "' is also a plan key",
                  "rename it: case keys may not reuse plan keys");
  }
}

}  // namespace

Config merge_inference_layers(const InferenceLayers& layers, Diagnostics& diags) {
  const Config& configurations = *layers.configurations;
  const Config& parameters = *layers.parameters;

  for (const auto& key : inference_shared_keys()) {
    if (!configurations.has(key))
      diags.error({configurations.origin(), 0}, "missing shared key '" + key + "'",
                  "every configurations.yaml defines " + join_or_none(inference_shared_keys()));
  }
  for (const auto& key : parameters.keys()) {
    if (const ConfigEntry* twin = configurations.find(key))
      diags.error(parameters.at(key).source,
                  "'" + key + "' is defined in both parameters and configurations (" + twin->source.str() + ")",
                  "keep it in one file");
  }
  check_plan_collisions(configurations, layers.plan_keys, diags);
  check_plan_collisions(parameters, layers.plan_keys, diags);

  Config merged = configurations;
  for (const auto& key : parameters.keys()) {
    if (!configurations.has(key)) merged.set(key, parameters.at(key).value, parameters.at(key).source);
  }
  if (!layers.vendor) return merged;

  const Config& vendor = *layers.vendor;
  for (const auto& key : vendor.keys()) {
    const ConfigEntry& entry = vendor.at(key);
    if (contains(layers.plan_keys, key)) {
      diags.error(entry.source, "'" + key + "' is a plan key: a vendor config may not set it", "remove it");
      continue;
    }
    if (const ConfigEntry* param = parameters.find(key)) {
      diags.error(entry.source,
                  "'" + key + "' is a case parameter (" + param->source.str() + "): vendors may not change it",
                  "remove it");
      continue;
    }
    const ConfigEntry* original = configurations.find(key);
    if (!original) {
      diags.warning(entry.source, "vendor adds a new key '" + key + "' = " + value_text(entry.value));
    } else if (values_equal(original->value, entry.value)) {
      diags.error(
          entry.source,
          "'" + key + "' overrides " + original->source.str() + " with the same value " + value_text(entry.value),
          "remove the line: an override must change something");
      continue;
    } else {
      diags.info(entry.source,
                 "vendor changes '" + key + "' from " + value_text(original->value) + " to " + value_text(entry.value));
    }
    merged.set(key, entry.value, entry.source);
  }
  return merged;
}

std::optional<Config> load_inference_config(const Repo& repo, const std::string& case_name, const std::string& vendor,
                                            const Source& where, const std::vector<std::string>& plan_keys,
                                            Diagnostics& diags) {
  const int errors_before = diags.error_count();
  const std::string dir = repo.inference_case_dir(case_name);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    const auto cases = repo.inference_cases();
    const std::string near = closest_match(case_name, cases);
    diags.error(where, "unknown inference case '" + case_name + "'",
                (near.empty() ? "" : "did you mean '" + near + "'? ") + "cases here: " + join_or_none(cases));
    return std::nullopt;
  }
  if (!fs::is_directory(repo.vendor_dir(vendor), ec)) {
    diags.error(where, "vendor folder " + repo.vendor_dir(vendor) + " does not exist",
                "vendors here: " + join_or_none(repo.vendors()));
    return std::nullopt;
  }
  auto configurations = load_config_file(dir + "/configurations.yaml", diags);
  auto parameters = load_config_file(dir + "/parameters.yaml", diags);
  std::optional<Config> vendor_config;
  const std::string vendor_file = repo.vendor_inference_config(vendor, case_name);
  if (fs::exists(vendor_file, ec)) {
    vendor_config = load_config_file(vendor_file, diags);
    if (!vendor_config) return std::nullopt;
  }
  if (!configurations || !parameters) return std::nullopt;

  InferenceLayers layers;
  layers.configurations = &*configurations;
  layers.parameters = &*parameters;
  layers.vendor = vendor_config ? &*vendor_config : nullptr;
  layers.plan_keys = plan_keys;
  Config merged = merge_inference_layers(layers, diags);
  merged.set_origin("config of inference case " + case_name);
  if (diags.error_count() != errors_before) return std::nullopt;
  return merged;
}

bool apply_inference_overrides(Config& config, const std::vector<Override>& overrides, Diagnostics& diags) {
  const Config defaults = config;
  bool ok = true;
  for (const auto& o : overrides) {
    if (check_against_base(defaults, o.key, o.value, o.source, o.source.file, diags))
      config.set(o.key, o.value, o.source);
    else
      ok = false;
  }
  return ok;
}

std::optional<CaseKey> parse_inference_key(const std::string& text, const Source& where, Diagnostics& diags) {
  std::vector<std::string> f;
  std::size_t start = 0;
  while (true) {
    const auto colon = text.find(':', start);
    f.push_back(text.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (f.size() != 4) {
    diags.error(where, "inference case '" + text + "' must be case:framework:hardware:repeat",
                "e.g. lenet5:libtorch:CPU:1");
    return std::nullopt;
  }
  return parse_case_key(f[0] + ":" + kInferencePrefix + f[1] + ":" + f[2] + ":1:1:" + f[3], where, diags);
}

std::string inference_key_text(const CaseKey& key) {
  return key.model + ":" + inference_framework(key) + ":" + key.hardware + ":" + std::to_string(key.repeat);
}

}  // namespace xpuperf
