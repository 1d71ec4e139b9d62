#pragma once
// A flat key → value config where every value remembers the file and line it came from.
// Case configs, vendor overrides and plans are all read into this one type; the merge policies
// (training_config.h, inference_config.h) layer them.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "xpuperf/core/diagnostics.h"

namespace xpuperf {

// A user-caused problem with a value, with the file and line in its message.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The kind of a YAML value, read the way YAML 1.2's core schema reads plain scalars:
// `12` is an int, `1e-4` a float, `true` a bool, `~` null, `"12"` (quoted) a string.
enum class ValueKind { Null, Bool, Int, Float, String, List, Map };

ValueKind value_kind(const YAML::Node& node);
const char* value_kind_name(ValueKind kind);
// The number an Int or Float value holds (0x1F, 0o17, 1e400 = inf, .nan); never throws, where
// yaml-cpp's as<double>() throws on hexadecimal, octal and out-of-range values.
double number_of(const YAML::Node& node);
// A value as one line of YAML (flow style for lists and maps), for messages: control characters
// escaped and a long value cut (strings.h, printable).
std::string value_text(const YAML::Node& node);
// The same, with strings in double quotes so that `"fast"` and `fast` read as what they are.
std::string quoted_value_text(const YAML::Node& node);
// Equal as values: `8` == `8.0`, `True` == `true`; lists and maps element by element.
bool values_equal(const YAML::Node& a, const YAML::Node& b);
// A string value that stays a string whatever it looks like ("12", "true").
YAML::Node string_node(const std::string& text);
// Reads one value written on the command line (`--set lr=0.1`) as YAML would.
YAML::Node parse_scalar_text(const std::string& text);

struct ConfigEntry {
  YAML::Node value;
  Source source;
};

class Config {
 public:
  Config() = default;
  explicit Config(std::string origin) : origin_(std::move(origin)) {}

  // Where the config as a whole came from, named in errors about missing keys.
  const std::string& origin() const { return origin_; }
  void set_origin(std::string origin) { origin_ = std::move(origin); }

  // Sets or replaces a value; a new key goes last, a replaced key keeps its place.
  void set(const std::string& key, YAML::Node value, Source source);
  void erase(const std::string& key);
  bool has(const std::string& key) const { return index_.count(key) > 0; }
  const ConfigEntry* find(const std::string& key) const;
  const ConfigEntry& at(const std::string& key) const;  // throws ConfigError when missing
  const std::vector<std::string>& keys() const { return order_; }
  bool empty() const { return order_.empty(); }

  // Typed getters: throw ConfigError naming file, line and key when the value has the wrong type.
  std::string get_string(const std::string& key) const;  // any scalar; null reads as ""
  std::int64_t get_int(const std::string& key) const;
  double get_number(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  std::vector<std::string> get_string_list(const std::string& key) const;

  std::string get_string(const std::string& key, const std::string& fallback) const;
  std::int64_t get_int(const std::string& key, std::int64_t fallback) const;
  double get_number(const std::string& key, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;

  // The merged config as YAML, each value followed by `# file:line` of its source.
  std::string to_annotated_yaml(const std::string& header = "") const;

 private:
  [[noreturn]] void type_error(const std::string& key, const char* expected) const;

  std::string origin_;
  std::vector<std::string> order_;
  std::map<std::string, ConfigEntry> index_;
};

// Shown instead of an absolute path when a file lies under the working directory.
std::string display_path(const std::string& path);

// The whole of a file; a missing, unreadable file or a folder is reported to `diags`.
std::optional<std::string> read_text_file(const std::string& path, Diagnostics& diags);
// Reads a YAML file whose top level is a map. Problems (missing file, bad YAML, top level not a
// map, duplicate keys) go to `diags`; returns nothing when the file could not be read at all.
std::optional<Config> load_config_file(const std::string& path, Diagnostics& diags);
// The same from text, `name` standing for the file in sources and messages.
std::optional<Config> load_config_text(const std::string& text, const std::string& name, Diagnostics& diags);

// Closest candidate by edit distance, for "did you mean ...?" hints; empty when none is close.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace xpuperf
