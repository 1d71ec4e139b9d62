#include "xpuperf/core/operation_config.h"

#include <algorithm>

namespace xpuperf {

std::optional<Config> load_operation_config(const Repo& repo, const std::string& op, const std::vector<Override>& sets,
                                            const Source& where, Diagnostics& diags) {
  const auto cases = repo.operation_cases();
  if (std::find(cases.begin(), cases.end(), op) == cases.end()) {
    const std::string near = closest_match(op, cases);
    diags.error(where, "unknown operator case '" + op + "' (" + repo.operation_config(op) + " does not exist)",
                (near.empty() ? "" : "did you mean '" + near + "'? ") + "cases/operation/ holds " +
                    std::to_string(cases.size()) + "; xpuperf op --list");
    return std::nullopt;
  }
  auto config = load_config_file(repo.operation_config(op), diags);
  if (!config) return std::nullopt;
  const Config defaults = *config;
  for (const auto& o : sets)
    if (check_against_base(defaults, o.key, o.value, o.source, "an override", diags))
      config->set(o.key, o.value, o.source);
  if (diags.has_errors()) return std::nullopt;
  return config;
}

std::optional<CaseKey> parse_operation_key(const std::string& text, const Source& where, Diagnostics& diags) {
  const auto parts = std::count(text.begin(), text.end(), ':');
  if (parts != 2) {
    diags.error(where, "operator case '" + text + "' must be op:hardware:repeat", "e.g. mm:H200:3");
    return std::nullopt;
  }
  const auto colon = text.find(':');
  const auto last = text.rfind(':');
  return parse_case_key(
      text.substr(0, colon) + ":" + kOperationFramework + text.substr(colon, last - colon) + ":1:1" + text.substr(last),
      where, diags);
}

std::string operation_key_text(const CaseKey& key) {
  return key.model + ":" + key.hardware + ":" + std::to_string(key.repeat);
}

}  // namespace xpuperf
