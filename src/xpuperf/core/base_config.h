#pragma once
// Base cases' configs and plan keys. A base case's parameters live in
// cases/base/<metric>/config.yaml; a vendor may adjust them in vendors/<v>/base/<metric>.yaml
// (any key the case defines); then the plan's and the command line's overrides.
// In a plan a base case is "metric:hardware:nnodes:nproc:repeat"; inside, its CaseKey has the
// framework "base" so that the result tree and summaries treat it like any case.

#include <optional>
#include <string>
#include <vector>

#include "xpuperf/core/case_key.h"
#include "xpuperf/core/config.h"
#include "xpuperf/core/repo.h"
#include "xpuperf/core/training_config.h"

namespace xpuperf {

inline constexpr const char* kBaseFramework = "base";

struct BaseConfigRequest {
  std::string metric;
  std::string vendor;
  std::vector<Override> sets;  // the plan's, then --set
  Source where;                // where the metric was named
};

// The merged config; every problem (unknown metric with the choices, a key the case does not
// define, a wrong kind) goes to `diags`, and nothing is returned when any is an error.
std::optional<Config> load_base_config(const Repo& repo, const BaseConfigRequest& request, Diagnostics& diags);

// "computation-BF16:H200:1:1:3" → {computation-BF16, base, H200, 1, 1, 3}.
std::optional<CaseKey> parse_base_key(const std::string& text, const Source& where, Diagnostics& diags);
// The key as a plan writes it (without the framework).
std::string base_key_text(const CaseKey& key);
inline bool is_base_key(const CaseKey& key) {
  return key.framework == kBaseFramework;
}

}  // namespace xpuperf
