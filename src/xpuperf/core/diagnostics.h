#pragma once
// Problems found while reading user input (plans, configs, case keys). Loaders record every
// problem instead of stopping at the first, so `xpuperf check` can show them all at once.

#include <string>
#include <vector>

namespace xpuperf {

// Where a value came from: a file and a 1-based line, or a description such as "--set".
struct Source {
  std::string file;
  int line = 0;  // 0 when there is no line (command line, defaults)

  std::string str() const;  // "file:line" or "file"
};

enum class Severity { Info, Warning, Error };

struct Diagnostic {
  Severity severity = Severity::Error;
  Source where;
  std::string message;
  std::string hint;  // what to change; may be empty
};

class Diagnostics {
 public:
  void add(Severity severity, Source where, std::string message, std::string hint = "");
  void error(Source where, std::string message, std::string hint = "");
  void warning(Source where, std::string message, std::string hint = "");
  void info(Source where, std::string message, std::string hint = "");

  bool has_errors() const { return errors_ > 0; }
  int error_count() const { return errors_; }
  const std::vector<Diagnostic>& items() const { return items_; }

  // One line per problem, compiler style: "file:line: error: message (hint)".
  std::string format(Severity at_least = Severity::Info) const;

 private:
  std::vector<Diagnostic> items_;
  int errors_ = 0;
};

const char* severity_name(Severity severity);
std::string format_diagnostic(const Diagnostic& d);

}  // namespace xpuperf
