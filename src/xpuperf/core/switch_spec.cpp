#include "xpuperf/core/switch_spec.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

namespace xpuperf {
namespace {

struct SpecRegistry {
  std::mutex mutex;
  std::map<std::string, SwitchSpec> by_key;
  std::vector<SwitchSpec> sorted;  // rebuilt on each registration (a few dozen, at start-up)
};

SpecRegistry& registry() {
  static SpecRegistry r;
  return r;
}

std::string join(const std::vector<std::string>& words, const std::string& separator) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) out += (i ? separator : "") + words[i];
  return out;
}

// "a, b or c".
std::string or_list(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

std::optional<std::int64_t> int_of(const YAML::Node& value) {
  if (value_kind(value) != ValueKind::Int) return std::nullopt;
  return value.as<std::int64_t>();
}

std::optional<bool> bool_of(const YAML::Node& value) {
  if (value_kind(value) != ValueKind::Bool) return std::nullopt;
  return value.as<bool>();
}

}  // namespace

SwitchSpec with_declaration(SwitchSpec spec, const char* file, int line) {
  std::string path = file;
  if (const auto at = path.rfind("src/xpuperf/"); at != std::string::npos) path = path.substr(at);
  spec.declared = Source{path, line};
  return spec;
}

bool register_switch_spec(SwitchSpec spec) {
  SpecRegistry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  r.by_key[spec.key] = std::move(spec);
  r.sorted.clear();
  for (const auto& [key, s] : r.by_key) r.sorted.push_back(s);
  return true;
}

const std::vector<SwitchSpec>& switch_specs() {
  return registry().sorted;
}

const SwitchSpec* find_switch_spec(const std::string& key) {
  const auto& all = switch_specs();
  const auto it = std::find_if(all.begin(), all.end(), [&](const SwitchSpec& s) { return s.key == key; });
  return it == all.end() ? nullptr : &*it;
}

std::string switch_on_value(const SwitchSpec& spec) {
  if (!spec.on_value.empty()) return spec.on_value;
  if (spec.type == SwitchType::Bool) return spec.default_value == "true" ? "false" : "true";
  if (spec.type == SwitchType::Int) return std::to_string(std::stoll(spec.default_value) + 1);
  for (const auto& c : spec.choices)
    if (c != spec.default_value) return c;
  return spec.default_value;
}

bool switch_is_on(const SwitchSpec& spec, const YAML::Node& value) {
  if (!value || !value.IsScalar()) return false;
  switch (spec.type) {
    case SwitchType::Bool: {
      const auto b = bool_of(value);
      return b && *b != (spec.default_value == "true");
    }
    case SwitchType::Int: {
      const auto n = int_of(value);
      return n && *n != std::stoll(spec.default_value);
    }
    case SwitchType::Choice:
      return value.Scalar() != spec.default_value;
  }
  return false;
}

std::string switch_values_text(const SwitchSpec& spec) {
  switch (spec.type) {
    case SwitchType::Bool:
      return "true or false";
    case SwitchType::Int: {
      if (!spec.max) return std::to_string(spec.min) + " or more";
      if (*spec.max - spec.min <= 4) {
        std::vector<std::string> values;
        for (std::int64_t v = spec.min; v <= *spec.max; ++v) values.push_back(std::to_string(v));
        return or_list(values);
      }
      return std::to_string(spec.min) + " to " + std::to_string(*spec.max);
    }
    case SwitchType::Choice:
      return or_list(spec.choices);
  }
  return "";
}

nlohmann::json switch_values(const Config& cfg) {
  nlohmann::json values = nlohmann::json::object();
  for (const auto& spec : switch_specs()) {
    const ConfigEntry* e = cfg.find(spec.key);
    const YAML::Node value = e ? e->value : YAML::Load(spec.default_value);
    switch (spec.type) {
      case SwitchType::Bool:
        values[spec.key] = value.as<bool>();
        break;
      case SwitchType::Int:
        values[spec.key] = value.as<std::int64_t>();
        break;
      case SwitchType::Choice:
        values[spec.key] = value.Scalar();
        break;
    }
  }
  return values;
}

void add_switch_defaults(Config& base, Diagnostics& diags) {
  const ConfigEntry* list = base.find("switches");
  if (!list) return;
  const ConfigEntry entry = *list;
  base.erase("switches");
  if (value_kind(entry.value) == ValueKind::Null) return;
  if (!entry.value.IsSequence()) {
    diags.error(entry.source, "'switches' must be a list of the training switches this case takes",
                "write e.g. switches: [zero_stage, cuda_graphs]; `xpuperf config --switches` lists them");
    return;
  }
  std::vector<std::string> known;
  for (const auto& spec : switch_specs()) known.push_back(spec.key);
  for (const auto& item : entry.value) {
    const Source where{entry.source.file, static_cast<int>(item.Mark().line) + 1};
    const std::string name = item.IsScalar() ? item.Scalar() : value_text(item);
    const SwitchSpec* spec = item.IsScalar() ? find_switch_spec(name) : nullptr;
    if (!spec) {
      const std::string near = closest_match(name, known);
      diags.error(where, "'" + name + "' under 'switches' is not a training switch",
                  (near.empty() ? "" : "did you mean '" + near + "'? ") + "`xpuperf config --switches` lists them");
      continue;
    }
    if (const ConfigEntry* set = base.find(name)) {
      diags.error(where, "'" + name + "' is both listed under 'switches' and set at " + set->source.str(),
                  "keep one: the list takes the declared default (" + spec->default_value +
                      "), the setting changes it for this case");
      continue;
    }
    base.set(name, parse_scalar_text(spec->default_value), spec->declared);
  }
}

void check_switch_values(const Config& cfg, Diagnostics& diags) {
  for (const auto& spec : switch_specs()) {
    const ConfigEntry* e = cfg.find(spec.key);
    if (!e) continue;
    const std::string what = "'" + spec.key + "' must be " + switch_values_text(spec) + ", got ";
    bool fits = true;
    switch (spec.type) {
      case SwitchType::Bool:
        fits = bool_of(e->value).has_value();
        break;
      case SwitchType::Int: {
        const auto n = int_of(e->value);
        fits = n && *n >= spec.min && (!spec.max || *n <= *spec.max);
        break;
      }
      case SwitchType::Choice:
        fits = e->value.IsScalar() &&
               std::find(spec.choices.begin(), spec.choices.end(), e->value.Scalar()) != spec.choices.end();
        break;
    }
    if (fits) continue;
    const std::string got = value_text(e->value);
    const std::string near =
        spec.type == SwitchType::Choice && e->value.IsScalar() ? closest_match(e->value.Scalar(), spec.choices) : "";
    diags.error(e->source, what + (spec.type == SwitchType::Choice ? "'" + got + "'" : got),
                near.empty() ? spec.key + ": " + spec.doc : "did you mean '" + near + "'?");
  }
}

std::optional<std::vector<std::string>> switch_token_sets(const std::string& token, const Source& where,
                                                          Diagnostics& diags) {
  for (const auto& spec : switch_specs()) {
    if (spec.type == SwitchType::Choice &&
        std::find(spec.sweep_values.begin(), spec.sweep_values.end(), token) != spec.sweep_values.end())
      return std::vector<std::string>{spec.key + "=" + token};
    if (spec.sweep_token.empty()) continue;
    if (spec.type == SwitchType::Bool && token == spec.sweep_token)
      return std::vector<std::string>{spec.key + "=" + switch_on_value(spec)};
    if (spec.type != SwitchType::Int || token.size() <= spec.sweep_token.size() || token.size() > 12 ||
        token.compare(0, spec.sweep_token.size(), spec.sweep_token) != 0)
      continue;
    const std::string digits = token.substr(spec.sweep_token.size());
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    const std::int64_t n = std::stoll(digits);  // at most 11 digits: no overflow
    if (n < spec.sweep_min.value_or(spec.min) || (spec.max && n > *spec.max)) {
      SwitchSpec token_range = spec;
      token_range.min = spec.sweep_min.value_or(spec.min);
      diags.error(where, "'" + token + "': " + spec.key + " must be " + switch_values_text(token_range),
                  "the strategies: " + switch_tokens_text());
      return std::nullopt;
    }
    return std::vector<std::string>{spec.key + "=" + digits};
  }
  return std::nullopt;
}

std::string switch_tokens_text() {
  std::vector<std::string> tokens;
  for (const auto& spec : switch_specs()) {
    for (const auto& v : spec.sweep_values) tokens.push_back(v);
    if (spec.sweep_token.empty()) continue;
    tokens.push_back(spec.type == SwitchType::Int ? spec.sweep_token + "N" : spec.sweep_token);
  }
  return join(tokens, ", ");
}

std::string switch_table_markdown() {
  std::ostringstream md;
  md << "| switch | values | default | sweep token | not yet with | what it does |\n";
  md << "| --- | --- | --- | --- | --- | --- |\n";
  for (const auto& spec : switch_specs()) {
    std::string values = switch_values_text(spec);
    if (!spec.unit.empty()) values += " (" + spec.unit + ")";
    std::string token;
    if (!spec.sweep_values.empty()) token = "`" + join(spec.sweep_values, "`, `") + "`";
    if (!spec.sweep_token.empty()) token = "`" + spec.sweep_token + (spec.type == SwitchType::Int ? "N" : "") + "`";
    std::vector<std::string> refused;
    for (const auto& other : spec.not_yet_with) refused.push_back("`" + other + "`");
    md << "| `" << spec.key << "` | " << values << " | `" << spec.default_value << "` | " << token << " | "
       << join(refused, ", ") << " | " << spec.doc << " |\n";
  }
  return md.str();
}

std::string switch_matrix_text() {
  const auto& all = switch_specs();
  // The pair is refused when either side lists the other.
  const auto refused = [&](const SwitchSpec& a, const SwitchSpec& b) {
    const auto lists = [](const SwitchSpec& s, const std::string& key) {
      return std::find(s.not_yet_with.begin(), s.not_yet_with.end(), key) != s.not_yet_with.end();
    };
    return lists(a, b.key) || lists(b, a.key);
  };
  std::size_t width = 0;
  for (const auto& s : all) width = std::max(width, s.key.size());
  std::ostringstream out;
  out << "Columns, in the rows' order: ";
  for (std::size_t i = 0; i < all.size(); ++i) out << (i ? ", " : "") << i + 1 << " " << all[i].key;
  out << "\nx: not yet together (the check refuses the pair, both on); .: they combine\n\n";
  out << std::string(width + 5, ' ');
  for (std::size_t i = 0; i < all.size(); ++i) out << ((i + 1) % 10);
  out << "\n";
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::string row = std::to_string(i + 1);
    row = std::string(3 - std::min<std::size_t>(3, row.size()), ' ') + row + " " + all[i].key;
    out << row << std::string(width + 5 - row.size(), ' ');
    for (std::size_t j = 0; j < all.size(); ++j) out << (i == j ? ' ' : refused(all[i], all[j]) ? 'x' : '.');
    out << "\n";
  }
  return out.str();
}

}  // namespace xpuperf
