#pragma once
// Operator cases' configs and plan keys (FlagPerf's operator benchmarks). An operator case's
// shapes, dtypes and timing live in cases/operation/<op>/config.yaml; then the plan's and the
// command line's overrides, each of a key the case defines. In a plan an operator case is
// "op:hardware:repeat" under `operation:` (a collective's "op:hardware:nnodes:nproc:repeat"); inside,
// its CaseKey has the framework "op" (one node and one process unless the key says more) so that
// the result tree and summaries treat it like any case.

#include <optional>
#include <string>
#include <vector>

#include "xpuperf/core/case_key.h"
#include "xpuperf/core/config.h"
#include "xpuperf/core/repo.h"
#include "xpuperf/core/training_config.h"

namespace xpuperf {

inline constexpr const char* kOperationFramework = "op";

// The merged config; an unknown operator (with the nearest name), a key the case does not define or
// of another kind goes to `diags`, and nothing is returned when any is an error.
std::optional<Config> load_operation_config(const Repo& repo, const std::string& op, const std::vector<Override>& sets,
                                            const Source& where, Diagnostics& diags);

// "mm:H200:3" → {mm, op, H200, 1, 1, 3}; "all_reduce:H200:1:2:3" → {all_reduce, op, H200, 1, 2, 3}.
std::optional<CaseKey> parse_operation_key(const std::string& text, const Source& where, Diagnostics& diags);
std::string operation_key_text(const CaseKey& key);
inline bool is_operation_key(const CaseKey& key) {
  return key.framework == kOperationFramework;
}

}  // namespace xpuperf
