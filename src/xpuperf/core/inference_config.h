#pragma once
// The inference config rules of FlagPerf's inference framework:
//   configurations.yaml — the keys every case shares (batch_size, flops, fp16, compiler, ...)
//   parameters.yaml     — case-specific keys a vendor may not touch
//   vendors/<v>/inference/<case>_configurations.yaml — the vendor's overrides
// A key in both configurations and parameters, or equal to a plan key, is an error. A vendor
// key that is new is a warning, one that changes a value is logged as info, and one that
// "overrides" with the same value is an error (FlagPerf exits on it).

#include <optional>
#include <string>
#include <vector>

#include "xpuperf/core/case_key.h"
#include "xpuperf/core/config.h"
#include "xpuperf/core/repo.h"
#include "xpuperf/core/training_config.h"

namespace xpuperf {

// The keys every configurations.yaml must define.
const std::vector<std::string>& inference_shared_keys();

struct InferenceLayers {
  const Config* configurations = nullptr;  // required
  const Config* parameters = nullptr;      // required (may be empty)
  const Config* vendor = nullptr;          // may be absent
  std::vector<std::string> plan_keys;      // names a case config may not reuse
};

Config merge_inference_layers(const InferenceLayers& layers, Diagnostics& diags);

// Reads cases/inference/<case>/{configurations,parameters}.yaml and the vendor's file (when the
// vendor has one) and merges them.
std::optional<Config> load_inference_config(const Repo& repo, const std::string& case_name, const std::string& vendor,
                                            const Source& where, const std::vector<std::string>& plan_keys,
                                            Diagnostics& diags);

// --set and plan overrides on a merged inference config: each key must be one the case defines
// (configurations or parameters) and keep its kind. False when any is an error.
bool apply_inference_overrides(Config& config, const std::vector<Override>& overrides, Diagnostics& diags);

// In a plan an inference case is "case:framework:hardware:repeat"; inside, its CaseKey has the
// framework "infer-<framework>" (one node, one process) so that the result tree and summaries
// treat it like any case.
inline constexpr const char* kInferencePrefix = "infer-";
std::optional<CaseKey> parse_inference_key(const std::string& text, const Source& where, Diagnostics& diags);
std::string inference_key_text(const CaseKey& key);
inline bool is_inference_key(const CaseKey& key) {
  return key.framework.rfind(kInferencePrefix, 0) == 0;
}
// "infer-libtorch" → "libtorch".
inline std::string inference_framework(const CaseKey& key) {
  return key.framework.substr(std::string(kInferencePrefix).size());
}

}  // namespace xpuperf
