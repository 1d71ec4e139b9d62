#pragma once
// One declaration per training switch, beside its strategy (in the switch's torch-free
// *_check.cpp): its key, type, default, values, unit, one line of documentation, its sweep token
// and the switches it does not combine with yet. From the declarations come the switches' value
// checks (check_training_switches), their defaults as the runtime reads them and the lists of
// SUBMIT_INFO and FINISHED (switch_values), the sweep's tokens (`xpuperf sweep --strategies`),
// `xpuperf config --switches` (the table and the compatibility matrix) and docs/TRAINING.md's
// switch table, which a test holds to them; another test holds the matrix to what the checks
// refuse.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "xpuperf/core/config.h"
#include "xpuperf/core/diagnostics.h"

namespace xpuperf {

enum class SwitchType { Bool, Int, Choice };

struct SwitchSpec {
  std::string key;
  SwitchType type = SwitchType::Bool;
  std::string default_value;         // as written in YAML: "false", "0", "fp32"
  std::int64_t min = 0;              // Int: the smallest value
  std::optional<std::int64_t> max;   // Int: the largest, where there is one
  std::vector<std::string> choices;  // Choice: the values
  std::string unit;                  // what an Int counts ("ranks", "samples"); "" for the others
  std::string doc;                   // one line: what it does
  // The sweep's word for it (`xpuperf sweep --strategies "bf16+zero1"`): a Bool's token turns it on
  // ("ckpt"), an Int's is a prefix of its value ("zero" + 1), a Choice's tokens are its values that
  // are listed here; "" and empty: none.
  std::string sweep_token;
  std::vector<std::string> sweep_values;
  std::optional<std::int64_t> sweep_min;  // an Int token's smallest value, where above min
  // What it is refused with, when both are on, until it is built ("not yet with").
  std::vector<std::string> not_yet_with;
  // A value that turns it on (for the matrix's test and `config --switches`); "" for the default's
  // opposite (Bool) or the smallest value above the default (Int).
  std::string on_value;
  // Whether SUBMIT_INFO and FINISHED write its value (switch_values): a run's result says how it ran.
  bool in_submit_info = false, in_finished = false;
  Source declared;  // where the declaration is (file:line), the provenance of its default
};

// Called once a switch, by a static registrar beside its strategy; returns true. Use
// XPUPERF_SWITCH_SPEC, which records where the declaration is.
bool register_switch_spec(SwitchSpec spec);
#define XPUPERF_SWITCH_SPEC(...) \
  ::xpuperf::register_switch_spec(::xpuperf::with_declaration(__VA_ARGS__, __FILE__, __LINE__))
SwitchSpec with_declaration(SwitchSpec spec, const char* file, int line);

// Every declared switch, by key.
const std::vector<SwitchSpec>& switch_specs();
const SwitchSpec* find_switch_spec(const std::string& key);

// The value that turns `spec` on, as YAML text.
std::string switch_on_value(const SwitchSpec& spec);
// Whether `value` (YAML text) differs from the default: the switch is on.
bool switch_is_on(const SwitchSpec& spec, const YAML::Node& value);
// The values `spec` takes, in words: "0, 1, 2 or 3", "1 or more", "fp32, tf32, bf16 or fp16".
std::string switch_values_text(const SwitchSpec& spec);

// Every declared switch's value in `cfg` (its declared default where `cfg` does not set it), as JSON
// of its type (true, 2, "bf16"), by key: what the runtime reads and SUBMIT_INFO and FINISHED write.
// Call after check_switch_values found no error.
nlohmann::json switch_values(const Config& cfg);

// A training case's `_base.yaml` names the switches it takes, not their defaults: each one it
// sets (a value of its own, such as `precision: bf16`) and each one listed under `switches:`,
// whose default is the declaration's. This replaces the list by those defaults, each with its
// declaration (file:line) as its source. An unknown name, or a switch both listed and set, is an
// error at its line.
void add_switch_defaults(Config& base, Diagnostics& diags);

// Each declared switch the config sets: of its type and within its values; errors at its line.
void check_switch_values(const Config& cfg, Diagnostics& diags);

// What a sweep token sets ("zero1" -> {"zero_stage=1"}); nullopt when no switch has the token;
// an error in `diags` (with nullopt) when one has it but not that value.
std::optional<std::vector<std::string>> switch_token_sets(const std::string& token, const Source& where,
                                                          Diagnostics& diags);
// The tokens, for help and errors: "fp32, tf32, ..., zeroN, ckpt, ...".
std::string switch_tokens_text();

// The README's switch table (Markdown): key, values, default, sweep token, not yet with, and what
// it does.
std::string switch_table_markdown();
// The compatibility matrix as text: a row a switch, a column a switch, "x" where the pair is
// refused ("not yet with"), "." where it combines.
std::string switch_matrix_text();

}  // namespace xpuperf
