#include "xpuperf/core/base_config.h"

#include <filesystem>

namespace xpuperf {

namespace fs = std::filesystem;

std::optional<Config> load_base_config(const Repo& repo, const BaseConfigRequest& request, Diagnostics& diags) {
  std::error_code ec;
  const std::string path = repo.base_config(request.metric);
  if (!fs::exists(path, ec)) {
    const auto metrics = repo.base_metrics();
    const std::string near = closest_match(request.metric, metrics);
    diags.error(request.where, "no base case '" + request.metric + "' (" + path + " does not exist)",
                (near.empty() ? "" : "did you mean '" + near + "'? ") + "base cases: " + join_or_none(metrics));
    return std::nullopt;
  }
  auto config = load_config_file(path, diags);
  if (!config) return std::nullopt;
  const Config defaults = *config;
  const std::string vendor_path = repo.vendor_base_config(request.vendor, request.metric);
  if (!request.vendor.empty() && fs::exists(vendor_path, ec)) {
    if (auto vendor = load_config_file(vendor_path, diags)) {
      for (const auto& key : vendor->keys()) {
        const ConfigEntry& entry = vendor->at(key);
        if (check_against_base(defaults, key, entry.value, entry.source, "the vendor's base config", diags))
          config->set(key, entry.value, entry.source);
      }
    }
  }
  for (const auto& o : request.sets)
    if (check_against_base(defaults, o.key, o.value, o.source, "an override", diags))
      config->set(o.key, o.value, o.source);
  if (diags.has_errors()) return std::nullopt;
  return config;
}

std::optional<CaseKey> parse_base_key(const std::string& text, const Source& where, Diagnostics& diags) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) {
    diags.error(where, "base case '" + text + "' must be metric:hardware:nnodes:nproc:repeat",
                "e.g. computation-FP32:CPU:1:1:1");
    return std::nullopt;
  }
  return parse_case_key(text.substr(0, colon) + ":" + kBaseFramework + text.substr(colon), where, diags);
}

std::string base_key_text(const CaseKey& key) {
  return key.model + ":" + key.hardware + ":" + std::to_string(key.nnodes) + ":" + std::to_string(key.nproc) + ":" +
         std::to_string(key.repeat);
}

}  // namespace xpuperf
