#include "xpuperf/core/diagnostics.h"

#include <utility>

#include "xpuperf/core/strings.h"

namespace xpuperf {

std::string Source::str() const {
  if (line > 0) return file + ":" + std::to_string(line);
  return file;
}

const char* severity_name(Severity severity) {
  switch (severity) {
    case Severity::Info:
      return "info";
    case Severity::Warning:
      return "warning";
    case Severity::Error:
      return "error";
  }
  return "error";
}

std::string format_diagnostic(const Diagnostic& d) {
  std::string out;
  if (!d.where.file.empty()) out += d.where.str() + ": ";
  out += severity_name(d.severity);
  out += ": " + d.message;
  if (!d.hint.empty()) out += "\n    fix: " + d.hint;
  return terminal_safe(out);
}

void Diagnostics::add(Severity severity, Source where, std::string message, std::string hint) {
  if (severity == Severity::Error) ++errors_;
  items_.push_back({severity, std::move(where), std::move(message), std::move(hint)});
}

void Diagnostics::error(Source where, std::string message, std::string hint) {
  add(Severity::Error, std::move(where), std::move(message), std::move(hint));
}

void Diagnostics::warning(Source where, std::string message, std::string hint) {
  add(Severity::Warning, std::move(where), std::move(message), std::move(hint));
}

void Diagnostics::info(Source where, std::string message, std::string hint) {
  add(Severity::Info, std::move(where), std::move(message), std::move(hint));
}

std::string Diagnostics::format(Severity at_least) const {
  std::string out;
  for (const auto& d : items_) {
    if (static_cast<int>(d.severity) < static_cast<int>(at_least)) continue;
    out += format_diagnostic(d) + "\n";
  }
  return out;
}

}  // namespace xpuperf
