#pragma once
// What the torch-free commands hand over to the LibTorch half (cli/torch_entry.h): one rank of a
// training case, one inference case. Torch-free, so that the CLI can build them.

#include <string>

#include "xpuperf/core/config.h"
#include "xpuperf/core/rank_env.h"
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

}  // namespace xpuperf
