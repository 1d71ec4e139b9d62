// The values each training and model parameter may take, checked when a config loads (`xpuperf
// check`, `train`, `sweep`), so that a value the runtime would refuse, or worse take (a negative
// learning rate), is named with its file and line before anything starts, with every other
// problem of the plan. Each parameter of the config that has a rule here and a value outside it
// is an error at the line that set it; a value of the wrong type is left to the merge.

#include <cmath>
#include <optional>
#include <set>

#include "xpuperf/core/strings.h"
#include "xpuperf/core/training_switches.h"
#include "xpuperf/core/vendor_choices.h"

namespace xpuperf::train {
namespace {

enum class Rule { Positive, NonNegative, Fraction, FractionClosed };

struct NumberLimit {
  const char* key;
  Rule rule;
  const char* meaning;  // what the key is, for the hint
};

// Parameters the runtime and the shared data paths read, by name, whichever case has them.
const NumberLimit kNumberLimits[] = {
    {"train_batch_size", Rule::Positive, "samples a rank takes a step"},
    {"eval_batch_size", Rule::Positive, "samples a rank takes an evaluation step"},
    {"lr", Rule::NonNegative, "the peak learning rate (0 leaves the weights as they are)"},
    {"log_freq", Rule::NonNegative, "steps between STEP_END events; 0 = none"},
    {"dist_timeout", Rule::Positive, "seconds to wait for the other ranks"},
    {"bucket_size_mb", Rule::Positive, "the gradient all-reduce bucket size"},
    {"image_size", Rule::Positive, "the crop fed to the model"},
    {"resize_size", Rule::Positive, "the shorter side before the centre crop"},
    {"num_classes", Rule::Positive, "the model's outputs"},
    {"seq_length", Rule::Positive, "tokens a sample"},
    {"synthetic_train_samples", Rule::Positive, "synthetic training samples"},
    {"synthetic_eval_samples", Rule::Positive, "synthetic evaluation samples"},
    {"synthetic_tokens", Rule::Positive, "tokens of the synthetic dataset"},
    {"num_threads", Rule::NonNegative, "CPU threads a rank; 0 = the host's cores shared by its ranks"},
    {"loader_threads", Rule::NonNegative, "loader threads a rank; 0 = the host's cores shared by its ranks"},
    {"loader_batches_ahead", Rule::NonNegative, "batches decoded ahead; 0 = two a loader thread"},
    {"max_image_pixels", Rule::NonNegative, "the largest image decoded; 0 = no limit"},
    {"max_epochs", Rule::NonNegative, "0 = no limit"},
    {"max_steps", Rule::NonNegative, "0 = no limit"},
    {"max_samples_termination", Rule::NonNegative, "0 = no limit"},
    {"time_budget", Rule::NonNegative, "seconds of training; 0 = no limit"},
    {"eval_interval_epochs", Rule::NonNegative, "0 = never during training"},
    {"eval_interval_steps", Rule::NonNegative, "0 = never"},
    {"warmup_steps", Rule::NonNegative, "steps of linear warm-up"},
    {"warmup_epochs", Rule::NonNegative, "epochs of linear warm-up"},
    {"weight_decay", Rule::NonNegative, "0 = none"},
    {"clip_grad_norm", Rule::NonNegative, "0 = no clipping"},
    {"timing_skip_steps", Rule::NonNegative, "steps left out of steady_samples_per_second"},
    {"profile_steps", Rule::NonNegative, "steps whose GPU kernels FINISHED lists; 0 = none"},
    {"census_steps", Rule::NonNegative, "steps whose operator calls FINISHED lists; 0 = none"},
    {"adam_eps", Rule::Positive, "Adam's epsilon"},
    {"dropout", Rule::Fraction, "a probability"},
    {"label_smoothing", Rule::Fraction, "a probability"},
    {"valid_share", Rule::Fraction, "the share of documents held out"},
    {"adam_beta1", Rule::Fraction, "Adam's first-moment decay"},
    {"adam_beta2", Rule::Fraction, "Adam's second-moment decay"},
    {"momentum", Rule::FractionClosed, "SGD's momentum"},
};

struct Choice {
  const char* key;
  std::set<std::string> values;
};

// The neutral values; a vendor adds the names of its own (register_vendor_choice).
const Choice kChoices[] = {
    {"device", {"auto", "cpu"}},
    {"dist_backend", {"auto", "gloo"}},
    {"optimizer", {"sgd", "adam", "adamw"}},
    {"lr_scheduler", {"constant", "cosine", "linear", "exponential"}},
    {"jpeg_decoder", {"auto", "cpu", "device"}},  // device: the device vendor's decoder
    {"target_mode", {"min", "max"}},
};

// A sample's length may not pass the model's positions, whichever name the model gives them.
const std::pair<const char*, const char*> kAtMost[] = {
    {"seq_length", "n_positions"},
    {"seq_length", "max_position_embeddings"},
    {"image_size", "resize_size"},
};

std::optional<double> number(const Config& cfg, const std::string& key) {
  const ConfigEntry* e = cfg.find(key);
  if (!e) return std::nullopt;
  const ValueKind kind = value_kind(e->value);
  if (kind != ValueKind::Int && kind != ValueKind::Float) return std::nullopt;
  return number_of(e->value);
}

std::string text_of(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  return value_text(YAML::Node(v));
}

void check_training_limits(const SwitchCheckInput& in, Diagnostics& diags) {
  const Config& cfg = in.cfg;
  for (const auto& limit : kNumberLimits) {
    const auto v = number(cfg, limit.key);
    if (!v) continue;
    if (!std::isfinite(*v)) continue;  // refused below, as every key's
    std::string wanted;
    switch (limit.rule) {
      case Rule::Positive:
        if (!(*v > 0)) wanted = "positive";
        break;
      case Rule::NonNegative:
        if (!(*v >= 0)) wanted = "0 or more";
        break;
      case Rule::Fraction:
        if (!(*v >= 0 && *v < 1)) wanted = "in [0, 1)";
        break;
      case Rule::FractionClosed:
        if (!(*v >= 0 && *v <= 1)) wanted = "in [0, 1]";
        break;
    }
    if (!wanted.empty())
      diags.error(cfg.at(limit.key).source,
                  "'" + std::string(limit.key) + "' must be " + wanted + ", got " + text_of(*v),
                  std::string(limit.key) + ": " + limit.meaning);
  }
  // No setting means infinity or not-a-number: .inf and .nan pass a range check written as
  // "at least 0" or "not above 1", and then train nothing.
  for (const auto& key : cfg.keys()) {
    const ConfigEntry& e = cfg.at(key);
    const ValueKind kind = value_kind(e.value);
    if ((kind != ValueKind::Float && kind != ValueKind::Int) || std::isfinite(number_of(e.value))) continue;
    diags.error(e.source,
                "'" + key + "' must be a finite number, got " + value_text(e.value) +
                    (kind == ValueKind::Int ? ", an integer larger than any number can hold" : ""),
                "write a number such as 0.5 or 1e-4");
  }
  for (const auto& choice : kChoices) {
    const ConfigEntry* e = cfg.find(choice.key);
    if (!e || value_kind(e->value) != ValueKind::String) continue;
    std::set<std::string> allowed = choice.values;
    for (const auto& name : vendor_choices(choice.key)) allowed.insert(name);
    const std::string v = e->value.Scalar();
    if (allowed.count(v)) continue;
    const std::vector<std::string> values(allowed.begin(), allowed.end());
    const std::string near = closest_match(v, values);
    diags.error(e->source,
                "'" + std::string(choice.key) + "' must be one of " + join_or_none(values) + ", got '" + v + "'",
                near.empty() ? "" : "did you mean '" + near + "'?");
  }
  for (const auto& [small, large] : kAtMost) {
    const auto a = number(cfg, small), b = number(cfg, large);
    if (a && b && *a > *b)
      diags.error(
          cfg.at(small).source,
          "'" + std::string(small) + "' " + text_of(*a) + " is more than the model's " + large + " " + text_of(*b),
          "lower " + std::string(small) + " to at most " + text_of(*b) + " (" + cfg.at(large).source.str() + ")");
  }
}

const bool limits_registered = register_limits_check(check_training_limits);

}  // namespace
}  // namespace xpuperf::train
