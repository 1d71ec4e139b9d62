#include "xpuperf/core/config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "xpuperf/core/strings.h"

namespace xpuperf {
namespace fs = std::filesystem;

namespace {

bool is_quoted(const YAML::Node& node) {
  return node.Tag() == "!";
}

// YAML 1.2's core schema, scanned by hand: std::regex recurses once a character and a long value
// (50,000 digits) overflowed the stack.
bool all_of_class(const std::string& s, std::size_t from, int (*in_class)(int)) {
  if (from >= s.size()) return false;
  for (std::size_t i = from; i < s.size(); ++i)
    if (!in_class(static_cast<unsigned char>(s[i]))) return false;
  return true;
}
int is_octal_digit(int c) {
  return c >= '0' && c <= '7';
}
std::size_t sign_length(const std::string& s) {
  return !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
}
bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

// [-+]?[0-9]+ | 0x[0-9a-fA-F]+ | 0o[0-7]+
bool int_syntax(const std::string& s) {
  if (starts_with(s, "0x")) return all_of_class(s, 2, isxdigit);
  if (starts_with(s, "0o")) return all_of_class(s, 2, is_octal_digit);
  return all_of_class(s, sign_length(s), isdigit);
}

// [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE][-+]?[0-9]+ )?
bool float_syntax(const std::string& s) {
  std::size_t i = sign_length(s);
  const auto digits = [&] {
    const std::size_t from = i;
    while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i - from;
  };
  const std::size_t whole = digits();
  std::size_t fraction = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    fraction = digits();
  }
  if (whole == 0 && fraction == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

bool inf_syntax(const std::string& s) {
  const std::string rest = s.substr(sign_length(s));
  return rest == ".inf" || rest == ".Inf" || rest == ".INF";
}
bool nan_syntax(const std::string& s) {
  return s == ".nan" || s == ".NaN" || s == ".NAN";
}

bool plain_null(const std::string& s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}
bool plain_true(const std::string& s) {
  return s == "true" || s == "True" || s == "TRUE";
}
bool plain_false(const std::string& s) {
  return s == "false" || s == "False" || s == "FALSE";
}
bool plain_int(const std::string& s) {
  return int_syntax(s);
}
bool plain_float(const std::string& s) {
  return float_syntax(s) || inf_syntax(s) || nan_syntax(s);
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

double number_of(const YAML::Node& node) {
  // strtod/strtoll never throw: an out-of-range value becomes ±inf or the largest integer.
  const std::string& s = node.Scalar();
  if (s.size() > 2 && s[0] == '0' && s[1] == 'x') return static_cast<double>(std::strtoull(s.c_str() + 2, nullptr, 16));
  if (s.size() > 2 && s[0] == '0' && s[1] == 'o') return static_cast<double>(std::strtoull(s.c_str() + 2, nullptr, 8));
  if (inf_syntax(s)) return s[0] == '-' ? -INFINITY : INFINITY;
  if (nan_syntax(s)) return NAN;
  return std::strtod(s.c_str(), nullptr);
}

ValueKind value_kind(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return ValueKind::Null;
    case YAML::NodeType::Sequence:
      return ValueKind::List;
    case YAML::NodeType::Map:
      return ValueKind::Map;
    case YAML::NodeType::Scalar:
      break;
  }
  if (is_quoted(node)) return ValueKind::String;
  const std::string& s = node.Scalar();
  if (plain_null(s)) return ValueKind::Null;
  if (plain_true(s) || plain_false(s)) return ValueKind::Bool;
  if (plain_int(s)) return ValueKind::Int;
  if (plain_float(s)) return ValueKind::Float;
  return ValueKind::String;
}

const char* value_kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::Null:
      return "null";
    case ValueKind::Bool:
      return "boolean";
    case ValueKind::Int:
      return "integer";
    case ValueKind::Float:
      return "number";
    case ValueKind::String:
      return "string";
    case ValueKind::List:
      return "list";
    case ValueKind::Map:
      return "map";
  }
  return "value";
}

std::string value_text(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << node;
  return printable(out.c_str());
}

std::string quoted_value_text(const YAML::Node& node) {
  if (value_kind(node) == ValueKind::String) return "\"" + printable(node.Scalar()) + "\"";
  return value_text(node);
}

bool values_equal(const YAML::Node& a, const YAML::Node& b) {
  const ValueKind ka = value_kind(a), kb = value_kind(b);
  const bool na = ka == ValueKind::Int || ka == ValueKind::Float;
  const bool nb = kb == ValueKind::Int || kb == ValueKind::Float;
  if (na && nb) return number_of(a) == number_of(b);
  if (ka != kb) return false;
  switch (ka) {
    case ValueKind::Null:
      return true;
    case ValueKind::Bool:
      return plain_true(a.Scalar()) == plain_true(b.Scalar());
    case ValueKind::String:
      return a.Scalar() == b.Scalar();
    case ValueKind::List: {
      if (a.size() != b.size()) return false;
      for (std::size_t i = 0; i < a.size(); ++i)
        if (!values_equal(a[i], b[i])) return false;
      return true;
    }
    case ValueKind::Map: {
      if (a.size() != b.size()) return false;
      for (const auto& kv : a) {
        const YAML::Node other = b[kv.first.Scalar()];
        if (!other.IsDefined() || !values_equal(kv.second, other)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

YAML::Node string_node(const std::string& text) {
  YAML::Node node(text);
  node.SetTag("!");
  return node;
}

YAML::Node parse_scalar_text(const std::string& text) {
  try {
    YAML::Node node = YAML::Load(text);
    if (node.IsDefined()) return node;
  } catch (const YAML::Exception&) {
    // Not valid YAML on its own (e.g. "a: b: c"): take it as a plain string.
  }
  return string_node(text);
}

void Config::set(const std::string& key, YAML::Node value, Source source) {
  auto it = index_.find(key);
  if (it == index_.end()) {
    order_.push_back(key);
    index_.emplace(key, ConfigEntry{std::move(value), std::move(source)});
  } else {
    it->second = ConfigEntry{std::move(value), std::move(source)};
  }
}

void Config::erase(const std::string& key) {
  if (index_.erase(key) > 0) order_.erase(std::find(order_.begin(), order_.end(), key));
}

const ConfigEntry* Config::find(const std::string& key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &it->second;
}

const ConfigEntry& Config::at(const std::string& key) const {
  if (const ConfigEntry* e = find(key)) return *e;
  std::string msg = (origin_.empty() ? std::string() : origin_ + ": ") + "missing key '" + key + "'";
  const std::string near = closest_match(key, order_);
  if (!near.empty()) msg += " (did you mean '" + near + "'?)";
  throw ConfigError(msg);
}

void Config::type_error(const std::string& key, const char* expected) const {
  const ConfigEntry& e = at(key);
  throw ConfigError(e.source.str() + ": '" + key + "' must be " + expected + ", got " + quoted_value_text(e.value));
}

std::string Config::get_string(const std::string& key) const {
  const ConfigEntry& e = at(key);
  switch (value_kind(e.value)) {
    case ValueKind::Null:
      return "";
    case ValueKind::List:
    case ValueKind::Map:
      type_error(key, "a string");
    default:
      return e.value.Scalar();
  }
}

std::int64_t Config::get_int(const std::string& key) const {
  const ConfigEntry& e = at(key);
  const ValueKind kind = value_kind(e.value);
  if (kind == ValueKind::Int || kind == ValueKind::Float) {
    // Integral floats (1e3, 64.0) count; beyond 2^53 a double no longer holds every integer.
    const double v = number_of(e.value);
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) <= 9007199254740992.0)
      return static_cast<std::int64_t>(v);
  }
  type_error(key, "an integer (at most 2^53 in size)");
}

double Config::get_number(const std::string& key) const {
  const ConfigEntry& e = at(key);
  const ValueKind kind = value_kind(e.value);
  if (kind == ValueKind::Int || kind == ValueKind::Float) return number_of(e.value);
  type_error(key, "a number");
}

bool Config::get_bool(const std::string& key) const {
  const ConfigEntry& e = at(key);
  if (value_kind(e.value) == ValueKind::Bool) return plain_true(e.value.Scalar());
  type_error(key, "true or false");
}

std::vector<std::string> Config::get_string_list(const std::string& key) const {
  const ConfigEntry& e = at(key);
  if (value_kind(e.value) != ValueKind::List) type_error(key, "a list");
  std::vector<std::string> out;
  for (const auto& item : e.value) {
    if (!item.IsScalar()) type_error(key, "a list of strings");
    out.push_back(item.Scalar());
  }
  return out;
}

std::string Config::get_string(const std::string& key, const std::string& fallback) const {
  return has(key) ? get_string(key) : fallback;
}
std::int64_t Config::get_int(const std::string& key, std::int64_t fallback) const {
  return has(key) ? get_int(key) : fallback;
}
double Config::get_number(const std::string& key, double fallback) const {
  return has(key) ? get_number(key) : fallback;
}
bool Config::get_bool(const std::string& key, bool fallback) const {
  return has(key) ? get_bool(key) : fallback;
}

std::string Config::to_annotated_yaml(const std::string& header) const {
  std::vector<std::string> lines;
  std::size_t width = 0;
  for (const auto& key : order_) {
    YAML::Emitter out;
    out.SetMapFormat(YAML::Flow);
    out.SetSeqFormat(YAML::Flow);
    out << YAML::BeginMap << YAML::Key << key << YAML::Value << index_.at(key).value << YAML::EndMap;
    // The flow map is "{key: value}": strip the braces to get one block-style line.
    std::string line = out.c_str();
    line = line.substr(1, line.size() - 2);
    width = std::max(width, line.size());
    lines.push_back(line);
  }
  std::ostringstream text;
  if (!header.empty()) {
    std::istringstream in(header);
    for (std::string l; std::getline(in, l);) text << "# " << l << "\n";
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    text << lines[i] << std::string(width - lines[i].size() + 2, ' ') << "# " << index_.at(order_[i]).source.str()
         << "\n";
  }
  return text.str();
}

std::string display_path(const std::string& path) {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (ec || path.empty()) return path;
  const fs::path abs = fs::path(path).is_absolute() ? fs::path(path) : cwd / path;
  const fs::path rel = abs.lexically_normal().lexically_relative(cwd);
  if (rel.empty() || *rel.begin() == "..") return abs.lexically_normal().string();
  return rel.string();
}

std::optional<Config> load_config_text(const std::string& text, const std::string& name, Diagnostics& diags) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    diags.error({name, e.mark.line + 1}, "invalid YAML: " + e.msg,
                "check indentation, quoting and brackets near line " + std::to_string(e.mark.line + 1));
    return std::nullopt;
  } catch (const YAML::Exception& e) {
    diags.error({name, 0}, std::string("invalid YAML: ") + e.what());
    return std::nullopt;
  }
  Config config(name);
  if (!root.IsDefined() || root.IsNull()) return config;  // an empty file is an empty map
  if (!root.IsMap()) {
    diags.error({name, root.Mark().line + 1}, std::string("the top level must be a map of 'key: value' lines, got a ") +
                                                  value_kind_name(value_kind(root)));
    return std::nullopt;
  }
  std::map<std::string, int> first_line;
  for (const auto& kv : root) {
    const int line = kv.first.Mark().line + 1;
    if (!kv.first.IsScalar()) {
      diags.error({name, line}, "keys must be plain names");
      continue;
    }
    const std::string key = kv.first.Scalar();
    auto [it, inserted] = first_line.emplace(key, line);
    if (!inserted) {
      diags.error({name, line}, "duplicate key '" + key + "' (first set at line " + std::to_string(it->second) + ")",
                  "keep one of the two lines");
      continue;
    }
    config.set(key, kv.second, {name, line});
  }
  return config;
}

std::optional<std::string> read_text_file(const std::string& path, Diagnostics& diags) {
  const std::string name = display_path(path);
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    diags.error({name, 0}, "file not found");
    return std::nullopt;
  }
  if (fs::is_directory(path, ec)) {
    diags.error({name, 0}, "is a folder, expected a YAML file");
    return std::nullopt;
  }
  std::ifstream in(path);
  if (!in) {
    diags.error({name, 0}, "cannot be read (permission denied?)");
    return std::nullopt;
  }
  // Bounded: a config is a few kilobytes, and /dev/zero or a dataset named by mistake must not be
  // read until memory runs out.
  constexpr std::size_t kMaxConfigBytes = 16u << 20;
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= kMaxConfigBytes && in.read(chunk, sizeof chunk).gcount() > 0)
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxConfigBytes) {
    diags.error({name, 0}, "is larger than 16 MiB: not a YAML config (a device or a data file?)",
                "name the plan or config file");
    return std::nullopt;
  }
  return text;
}

std::optional<Config> load_config_file(const std::string& path, Diagnostics& diags) {
  auto text = read_text_file(path, diags);
  if (!text) return std::nullopt;
  return load_config_text(*text, display_path(path), diags);
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = word.size() / 3 + 2;  // allow a few typos, not a different word
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

}  // namespace xpuperf
