#include "xpuperf/optim/optimizer_settings.h"

#include "xpuperf/core/switch_spec.h"

namespace xpuperf::optim {
namespace {

Source source_of(const Config& cfg, const std::string& key) {
  const ConfigEntry* e = cfg.find(key);
  return e ? e->source : Source{cfg.origin(), 0};
}

}  // namespace

OptimizerSettings read_optimizer_settings(const Config& cfg) {
  // The switches' values with their declared defaults (core/switch_spec.h).
  const nlohmann::json switches = switch_values(cfg);
  const auto flag = [&switches](const char* key) { return switches.at(key).get<bool>(); };
  OptimizerSettings s;
  s.name = cfg.get_string("optimizer", "sgd");
  if (s.name != "sgd" && s.name != "adam" && s.name != "adamw")
    throw ConfigError(cfg.at("optimizer").source.str() + ": 'optimizer' must be sgd, adam or adamw, got '" + s.name +
                      "'");
  s.lr = cfg.get_number("lr");
  s.weight_decay = cfg.get_number("weight_decay", 0.0);
  s.momentum = cfg.get_number("momentum", 0.0);
  s.beta1 = cfg.get_number("adam_beta1", 0.9);
  s.beta2 = cfg.get_number("adam_beta2", 0.999);
  s.eps = cfg.get_number("adam_eps", 1e-8);
  s.weight_decay_skip_1d = cfg.get_bool("weight_decay_skip_1d", false);
  s.implementation = switches.at("fused_optimizer").get<std::string>();
  s.bf16_weights = flag("bf16_weights");
  s.offload = flag("offload_optimizer");
  s.offload_overlap = flag("offload_overlap");
  const std::string precision = switches.at("precision").get<std::string>();
  s.offload_streams = cfg.get_bool("offload_stream_gradients", true) && precision != "fp16" && !flag("cuda_graphs");
  s.device_bf16 = precision == "bf16";
  s.implementation_source = source_of(cfg, "fused_optimizer");
  s.bf16_weights_source = source_of(cfg, "bf16_weights");
  s.offload_source = source_of(cfg, "offload_optimizer");
  return s;
}

}  // namespace xpuperf::optim
