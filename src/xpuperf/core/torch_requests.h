#pragma once
// What the torch-free commands hand over to the LibTorch half (cli/torch_entry.h): one rank of a
// training case, one inference case, one operator case. Torch-free, so that the CLI can build them.

#include <cstdint>
#include <string>
#include <vector>

#include "xpuperf/core/config.h"
#include "xpuperf/core/rank_env.h"
#include "xpuperf/core/roofline.h"
#include "xpuperf/core/vendor_spec.h"

namespace xpuperf {

struct TrainingRankRequest {
  std::string model;
  std::string framework;
  std::string vendor;
  Config config;  // merged (training_config.h)
  RankEnv env;
  VendorSpec vendor_spec;  // vendors/<vendor>/vendor.yaml: its plug-in is loaded before the first tensor
};

struct InferenceRequest {
  std::string name;       // the case, e.g. lenet5
  std::string framework;  // libtorch
  std::string vendor;
  Config config;           // merged (core/inference_config.h), with --set applied
  double peak_tflops = 0;  // the chip's peak at the case's precision, for MFU; 0: unknown
  std::string out_dir;     // where an exported model goes
  VendorSpec vendor_spec;  // vendors/<vendor>/vendor.yaml: its plug-in is loaded before the engine is made
};

// One operator case (`xpuperf op`): its config (cases/operation/<op>/config.yaml) and what the
// command line chose instead of the config's shapes and dtypes.
struct OperatorRequest {
  std::string name;  // the operator, e.g. mm
  Config config;
  std::vector<std::vector<std::int64_t>> shapes;  // empty: the config's (or its smoke_shapes)
  std::vector<std::string> dtypes;                // empty: the config's
  bool smoke = false;                             // the config's smoke_shapes: tiny, for the CPU tests
  std::string device = "auto";
  std::string json_out;  // where the rows go as JSON; "" for none
  std::string hardware;  // the chip, as the vendor's specs.yaml names it (written with the rows)
  VendorSpec vendor_spec;
  Roof datasheet_roof;         // the chip's (specs.yaml); empty when it lists none
  Roof measured_roof;          // the base cases' of a run (--roof); empty when none was given
  bool inaccurate_ok = false;  // exit 0 when every row ran, inaccurate ones too (a plan's round)
  bool list = false;           // instead: the operators, their shapes and formulas
  bool markdown = false;       // the list alone, as cases/operation/README.md's table
  RankEnv env;                 // a collective's ranks (one rank for every other operator)
};

}  // namespace xpuperf
