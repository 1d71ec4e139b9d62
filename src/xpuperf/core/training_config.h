#pragma once
// The training config merge (FlagPerf's standard-case specification): `_base.yaml` < vendor `config_<HW>x<N>x<P>.yaml`
// < plan values (vendor, data_dir) < command line `--set key=value`.
// `mutable_params.yaml` lists what a vendor may change; anything else in a vendor file is an
// error (FlagPerf only logs it).

#include <optional>
#include <string>
#include <vector>

#include "xpuperf/core/case_key.h"
#include "xpuperf/core/config.h"
#include "xpuperf/core/repo.h"

namespace xpuperf {

struct Override {
  std::string key;
  YAML::Node value;
  Source source;
};

// "key=value" from the command line; the value is read as YAML (`lr=0.1` is a number).
std::optional<Override> parse_set_override(const std::string& text, Diagnostics& diags);
// Every "key=value" of a list; each bad one goes to `diags`. With `where`, the overrides are
// attributed to it (a plan line) instead of to the text.
std::vector<Override> parse_set_overrides(const std::vector<std::string>& texts, Diagnostics& diags,
                                          const std::optional<Source>& where = std::nullopt);

// Checks one override against the defaults file: the key must exist there and keep its kind;
// `layer` names who set it in the message ("the vendor config", "--set").
bool check_against_base(const Config& base, const std::string& key, const YAML::Node& value, const Source& where,
                        const std::string& layer, Diagnostics& diags);

struct TrainingLayers {
  const Config* base = nullptr;            // _base.yaml (required)
  const Config* mutable_params = nullptr;  // mutable_params.yaml: `mutable_params: [..]` (required)
  const Config* vendor = nullptr;          // the vendor's hardware config; may be absent
  std::vector<Override> plan;              // vendor and data_dir from the plan
  std::vector<Override> command_line;      // --set
};

// Merges the layers; every rule broken goes to `diags`. The result is complete only when
// `diags` has no errors.
Config merge_training_layers(const TrainingLayers& layers, Diagnostics& diags);

// The names listed in mutable_params.yaml, with their lines.
std::vector<std::pair<std::string, Source>> mutable_param_names(const Config& mutable_params, Diagnostics& diags);

struct TrainingConfigRequest {
  CaseKey key;
  std::string vendor;
  std::string data_dir;   // empty: keep _base's
  Source where;           // where the request was written (a plan line, the command line)
  Source vendor_where;    // where the vendor was chosen; empty: `where`
  Source data_dir_where;  // where the data folder was given; empty: `where`
  std::vector<Override> sets;
};

// Finds the case's and vendor's files under `repo`, checks they exist (with the choices there
// are when they do not) and merges them.
std::optional<Config> load_training_config(const Repo& repo, const TrainingConfigRequest& request, Diagnostics& diags);

}  // namespace xpuperf
