#include "xpuperf/core/case_key.h"

#include <cstdlib>
#include <vector>

namespace xpuperf {

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string::size_type start = 0;
  while (true) {
    const auto end = text.find(sep, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

std::optional<int> positive_int(const std::string& text) {
  if (text.empty() || text.size() > 6) return std::nullopt;
  for (char c : text)
    if (c < '0' || c > '9') return std::nullopt;
  const int value = std::atoi(text.c_str());
  if (value <= 0) return std::nullopt;
  return value;
}

}  // namespace

bool is_safe_name(const std::string& name) {
  if (name.empty() || name[0] == '.' || name[0] == '-') return false;
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string CaseKey::str() const {
  return model + ":" + framework + ":" + hardware + ":" + std::to_string(nnodes) + ":" + std::to_string(nproc) + ":" +
         std::to_string(repeat);
}

std::string CaseKey::dir_name() const {
  std::string name = str();
  for (char& c : name)
    if (c == ':') c = '_';
  return name;
}

std::string CaseKey::config_name() const {
  return hardware + "x" + std::to_string(nnodes) + "x" + std::to_string(nproc);
}

std::optional<CaseKey> parse_case_key(const std::string& text, const Source& where, Diagnostics& diags) {
  const char* form = "model:framework:hardware:nnodes:nproc:repeat, e.g. lenet5:libtorch:CPU:1:1:3";
  const auto parts = split(text, ':');
  if (parts.size() != 6) {
    diags.error(where,
                "case key '" + text + "' has " + std::to_string(parts.size()) + " field" +
                    (parts.size() == 1 ? "" : "s") + ", expected 6",
                std::string("write it as ") + form);
    return std::nullopt;
  }
  const int errors_before = diags.error_count();
  const char* names[] = {"model", "framework", "hardware"};
  for (int i = 0; i < 3; ++i) {
    if (!is_safe_name(parts[i]))
      diags.error(where, "case key '" + text + "': " + names[i] + " '" + parts[i] + "' is not a valid name",
                  "use letters, digits, '.', '_' and '-' only");
  }
  const char* counts[] = {"nnodes", "nproc", "repeat"};
  int values[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) {
    const auto value = positive_int(parts[3 + i]);
    if (!value)
      diags.error(where,
                  "case key '" + text + "': " + counts[i] + " must be a positive integer, got '" + parts[3 + i] + "'",
                  std::string("write it as ") + form);
    else
      values[i] = *value;
  }
  if (diags.error_count() != errors_before) return std::nullopt;
  return CaseKey{parts[0], parts[1], parts[2], values[0], values[1], values[2]};
}

}  // namespace xpuperf
