#include "xpuperf/core/training_config.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "xpuperf/core/strings.h"
#include "xpuperf/core/switch_spec.h"
#include "xpuperf/core/training_switches.h"

namespace xpuperf {
namespace fs = std::filesystem;

namespace {

// Whether `value` may replace `base` without changing what kind of parameter it is.
bool kind_compatible(const YAML::Node& base, const YAML::Node& value, std::string& expected) {
  const ValueKind b = value_kind(base), v = value_kind(value);
  switch (b) {
    case ValueKind::Null:
      return true;
    case ValueKind::Int:
      expected = "an integer";
      if (v == ValueKind::Int) return true;
      if (v == ValueKind::Float) {
        const double d = number_of(value);
        return d == static_cast<double>(static_cast<long long>(d));
      }
      return false;
    case ValueKind::Float:
      expected = "a number";
      return v == ValueKind::Int || v == ValueKind::Float;
    case ValueKind::Bool:
      expected = "true or false";
      return v == ValueKind::Bool;
    case ValueKind::String:
      expected = "a string";
      return v != ValueKind::List && v != ValueKind::Map;
    case ValueKind::List:
      expected = "a list";
      return v == ValueKind::List;
    case ValueKind::Map:
      expected = "a map";
      return v == ValueKind::Map;
  }
  return true;
}

}  // namespace

bool check_against_base(const Config& base, const std::string& key, const YAML::Node& value, const Source& where,
                        const std::string& layer, Diagnostics& diags) {
  const ConfigEntry* entry = base.find(key);
  if (!entry) {
    const std::string near = closest_match(key, base.keys());
    diags.error(where,
                "'" + key + "' is not a parameter of this case (" + layer + " sets it, " + base.origin() +
                    " does not define it)",
                near.empty() ? "remove it" : "did you mean '" + near + "'?");
    return false;
  }
  std::string expected;
  if (!kind_compatible(entry->value, value, expected)) {
    diags.error(where, "'" + key + "' must be " + expected + ", got " + quoted_value_text(value),
                "the default is " + value_text(entry->value) + " (" + entry->source.str() + ")");
    return false;
  }
  return true;
}

std::optional<Override> parse_set_override(const std::string& text, Diagnostics& diags) {
  const auto eq = text.find('=');
  const Source where{"--set " + printable(text), 0};
  if (eq == std::string::npos || eq == 0) {
    diags.error(where, "expected key=value", "write e.g. --set train_batch_size=64");
    return std::nullopt;
  }
  return Override{text.substr(0, eq), parse_scalar_text(text.substr(eq + 1)), where};
}

std::vector<Override> parse_set_overrides(const std::vector<std::string>& texts, Diagnostics& diags,
                                          const std::optional<Source>& where) {
  std::vector<Override> out;
  for (const auto& text : texts)
    if (auto o = parse_set_override(text, diags)) {
      if (where) o->source = *where;
      out.push_back(*o);
    }
  return out;
}

std::vector<std::pair<std::string, Source>> mutable_param_names(const Config& mutable_params, Diagnostics& diags) {
  std::vector<std::pair<std::string, Source>> names;
  const ConfigEntry* entry = mutable_params.find("mutable_params");
  if (!entry) {
    diags.error({mutable_params.origin(), 0}, "missing 'mutable_params'",
                "list the parameters a vendor may change: mutable_params: [vendor, train_batch_size]");
    return names;
  }
  for (const auto& key : mutable_params.keys()) {
    if (key != "mutable_params")
      diags.error(mutable_params.at(key).source, "unknown key '" + key + "'", "the file holds only 'mutable_params'");
  }
  if (value_kind(entry->value) == ValueKind::Null) return names;
  if (!entry->value.IsSequence()) {
    diags.error(entry->source, "'mutable_params' must be a list of parameter names");
    return names;
  }
  for (const auto& item : entry->value) {
    const int line = item.Mark().line + 1;
    if (!item.IsScalar()) {
      diags.error({entry->source.file, line}, "'mutable_params' must list parameter names");
      continue;
    }
    names.emplace_back(item.Scalar(), Source{entry->source.file, line});
  }
  return names;
}

Config merge_training_layers(const TrainingLayers& layers, Diagnostics& diags) {
  const Config& base = *layers.base;
  Config merged = base;
  for (const char* required : {"vendor", "data_dir"}) {
    if (!base.has(required))
      diags.error({base.origin(), 0}, std::string("missing required parameter '") + required + "'",
                  std::string("add `") + required + ": \"\"`; the plan sets it");
  }

  std::set<std::string> mutable_keys;
  if (layers.mutable_params) {
    for (const auto& [name, where] : mutable_param_names(*layers.mutable_params, diags)) {
      if (!base.has(name))
        diags.error(where, "'" + name + "' is listed as mutable but " + base.origin() + " does not define it",
                    "define it in " + base.origin() + " or remove it from the list");
      mutable_keys.insert(name);
    }
    if (!mutable_keys.count("vendor"))
      diags.error({layers.mutable_params->origin(), 0}, "'vendor' must be listed in mutable_params",
                  "add vendor to the list: every vendor sets it");
  }

  if (layers.vendor) {
    const Config& vendor = *layers.vendor;
    for (const auto& key : vendor.keys()) {
      const ConfigEntry& entry = vendor.at(key);
      if (base.has(key) && !mutable_keys.count(key)) {
        diags.error(entry.source, "'" + key + "' is not mutable: a vendor config may not change it",
                    "remove it; the mutable parameters are " +
                        join_or_none(std::vector<std::string>(mutable_keys.begin(), mutable_keys.end())));
        continue;
      }
      if (check_against_base(base, key, entry.value, entry.source, "the vendor config", diags))
        merged.set(key, entry.value, entry.source);
    }
  }

  for (const auto& o : layers.plan) merged.set(o.key, o.value, o.source);

  for (const auto& o : layers.command_line) {
    if (!check_against_base(base, o.key, o.value, o.source, "--set", diags)) continue;
    if (!mutable_keys.count(o.key))
      diags.warning(o.source,
                    "'" + o.key + "' is not a mutable parameter: results are not comparable to the standard case");
    merged.set(o.key, o.value, o.source);
  }
  return merged;
}

std::optional<Config> load_training_config(const Repo& repo, const TrainingConfigRequest& request, Diagnostics& diags) {
  const CaseKey& key = request.key;
  const int errors_before = diags.error_count();
  std::error_code ec;

  if (!fs::is_directory(repo.training_case_dir(key.model, key.framework), ec)) {
    const auto models = repo.training_models();
    if (std::find(models.begin(), models.end(), key.model) == models.end()) {
      const std::string near = closest_match(key.model, models);
      diags.error(request.where, "unknown training case '" + key.model + "'",
                  (near.empty() ? "" : "did you mean '" + near + "'? ") + "cases here: " + join_or_none(models));
    } else {
      diags.error(request.where, "case '" + key.model + "' has no framework '" + key.framework + "'",
                  "frameworks of " + key.model + ": " + join_or_none(repo.training_frameworks(key.model)));
    }
    return std::nullopt;
  }
  if (!fs::is_directory(repo.vendor_dir(request.vendor), ec)) {
    diags.error(request.where, "vendor folder " + repo.vendor_dir(request.vendor) + " does not exist",
                "vendors here: " + join_or_none(repo.vendors()));
    return std::nullopt;
  }
  const std::string vendor_file = repo.vendor_training_config(request.vendor, key);
  if (!fs::is_regular_file(vendor_file, ec)) {
    const auto configs = repo.vendor_training_configs(request.vendor, key.model, key.framework);
    diags.error(request.where,
                "vendor '" + request.vendor + "' has no " + key.config_name() + " config for " + key.model + ":" +
                    key.framework + " (expected " + vendor_file + ")",
                configs.empty() ? "create that file with the vendor's settings for this hardware"
                                : "create it, or use a configured hardware: " + join_or_none(configs));
    return std::nullopt;
  }

  auto base = load_config_file(repo.training_base_config(key.model, key.framework), diags);
  auto mutable_params = load_config_file(repo.training_mutable_params(key.model, key.framework), diags);
  auto vendor = load_config_file(vendor_file, diags);
  if (!base || !mutable_params || !vendor) return std::nullopt;
  add_switch_defaults(*base, diags);

  TrainingLayers layers;
  layers.base = &*base;
  layers.mutable_params = &*mutable_params;
  layers.vendor = &*vendor;
  auto or_where = [&request](const Source& s) { return s.file.empty() ? request.where : s; };
  layers.plan.push_back({"vendor", string_node(request.vendor), or_where(request.vendor_where)});
  if (!request.data_dir.empty())
    layers.plan.push_back({"data_dir", string_node(request.data_dir), or_where(request.data_dir_where)});
  layers.command_line = request.sets;
  Config merged = merge_training_layers(layers, diags);
  merged.set_origin("config of " + key.str());
  // Even after an error above: the merged config keeps the default where a value was refused, and
  // `xpuperf check` promises every problem at once, not the first file's.
  const auto splits = load_model_splits(repo, key.model, key.framework, diags);
  check_training_switches(merged, key.world_size(), diags, splits ? &*splits : nullptr);
  if (diags.error_count() != errors_before) return std::nullopt;
  return merged;
}

}  // namespace xpuperf
