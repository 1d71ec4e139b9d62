#pragma once
// FlagPerf's case keys: `model:framework:hardware:nnodes:nproc:repeat` for training
// (e.g. `resnet50:libtorch:H100:1:8:3`).

#include <optional>
#include <string>

#include "xpuperf/core/diagnostics.h"

namespace xpuperf {

struct CaseKey {
  std::string model;
  std::string framework;
  std::string hardware;
  int nnodes = 1;
  int nproc = 1;
  int repeat = 1;

  std::string str() const;          // the key as written: "lenet5:libtorch:CPU:1:1:3"
  std::string dir_name() const;     // result folder: ':' replaced by '_'
  std::string config_name() const;  // vendor config stem: "CPUx1x1"
  int world_size() const { return nnodes * nproc; }
};

// Parses and validates a key; each problem (field count, empty or ill-formed names, counts that
// are not positive integers) is reported at `where`. Existence on disk is checked elsewhere.
std::optional<CaseKey> parse_case_key(const std::string& text, const Source& where, Diagnostics& diags);

// Names used in paths and shell commands: letters, digits, '.', '_', '-', not starting with '.'.
bool is_safe_name(const std::string& name);

}  // namespace xpuperf
