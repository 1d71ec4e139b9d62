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
  if (parts != 2 && parts != 4) {
    diags.error(where, "operator case '" + text + "' must be op:hardware:repeat (or op:hardware:nnodes:nproc:repeat)",
                "e.g. mm:H200:3, or all_reduce:H200:1:2:3 for a collective over 2 ranks");
    return std::nullopt;
  }
  const auto colon = text.find(':');
  const auto last = text.rfind(':');
  const std::string middle = text.substr(colon, last - colon);  // ":hardware" or ":hardware:nnodes:nproc"
  return parse_case_key(
      text.substr(0, colon) + ":" + kOperationFramework + middle + (parts == 2 ? ":1:1" : "") + text.substr(last),
      where, diags);
}

std::string operation_key_text(const CaseKey& key) {
  const std::string ranks =
      key.nnodes == 1 && key.nproc == 1 ? "" : ":" + std::to_string(key.nnodes) + ":" + std::to_string(key.nproc);
  return key.model + ":" + key.hardware + ranks + ":" + std::to_string(key.repeat);
}

}  // namespace xpuperf
