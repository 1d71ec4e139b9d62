#include "xpuperf/core/training_switches.h"

#include <map>

#include "xpuperf/core/switch_spec.h"

namespace xpuperf {
namespace {

// A value of the wrong type is the merge's error to report; here it reads as the default.
template <typename Get>
auto value_or(Get get, decltype(get()) fallback) -> decltype(get()) {
  try {
    return get();
  } catch (const ConfigError&) {
    return fallback;
  }
}

// A function-local static: registrars run at static initialisation, in any order.
std::map<std::string, SwitchCheck>& registered() {
  static std::map<std::string, SwitchCheck> checks;
  return checks;
}

SwitchCheck& limits_check() {
  static SwitchCheck check;
  return check;
}

std::function<std::int64_t(const SwitchCheckInput&)>& model_ranks_of() {
  static std::function<std::int64_t(const SwitchCheckInput&)> ranks;
  return ranks;
}

}  // namespace

std::int64_t SwitchCheckInput::get_int(const std::string& key, std::int64_t fallback) const {
  return value_or([&] { return cfg.get_int(key, fallback); }, fallback);
}

double SwitchCheckInput::get_number(const std::string& key, double fallback) const {
  return value_or([&] { return cfg.get_number(key, fallback); }, fallback);
}

std::string SwitchCheckInput::get_string(const std::string& key, const std::string& fallback) const {
  return value_or([&] { return cfg.get_string(key, fallback); }, fallback);
}

bool SwitchCheckInput::get_bool(const std::string& key, bool fallback) const {
  return value_or([&] { return cfg.get_bool(key, fallback); }, fallback);
}

Source SwitchCheckInput::source(const std::string& key) const {
  const ConfigEntry* e = cfg.find(key);
  return e ? e->source : Source{cfg.origin(), 0};
}

std::int64_t SwitchCheckInput::model_ranks() const {
  return model_ranks_of() ? model_ranks_of()(*this) : 1;
}

bool register_limits_check(SwitchCheck check) {
  limits_check() = std::move(check);
  return true;
}

bool register_model_ranks(std::function<std::int64_t(const SwitchCheckInput&)> ranks) {
  model_ranks_of() = std::move(ranks);
  return true;
}

bool register_switch_check(const std::string& name, SwitchCheck check) {
  registered()[name] = std::move(check);
  return true;
}

void check_training_switches(const Config& cfg, int world_size, Diagnostics& diags, const ModelSplits* splits) {
  const SwitchCheckInput in{cfg, world_size, splits};
  if (limits_check()) limits_check()(in, diags);
  check_switch_values(cfg, diags);  // each declared switch's type and values (switch_spec.h)
  for (const auto& [name, check] : registered()) check(in, diags);
}

}  // namespace xpuperf
