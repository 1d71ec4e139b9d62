#pragma once
// `xpuperf infer`, callable from torch-free code: the seven steps of FlagPerf's inference framework for one inference
// case.

#include <ostream>
#include <string>
#include <vector>

#include "xpuperf/core/config.h"
#include "xpuperf/core/vendor_spec.h"

namespace xpuperf::infer {

struct InferRequest {
  std::string name;       // the case, e.g. lenet5
  std::string framework;  // libtorch
  std::string vendor;
  Config config;           // merged (core/inference_config.h), with --set applied
  double peak_tflops = 0;  // the chip's peak at the case's precision, for MFU; 0: unknown
  std::string out_dir;     // where an exported model goes
  VendorSpec vendor_spec;  // vendors/<vendor>/vendor.yaml: its plug-in is loaded before the engine is made
};

// Runs the pipeline, printing PerfLog events (one INFER_STEP per step, ran or skipped and why,
// then FINISHED with the four throughputs, both accuracies, MFU, foo_time and latency) and a
// table. Returns 0 done, 1 a user-caused error (printed), 3 the case is not built in.
int run_inference(const InferRequest& request, std::ostream& out, std::ostream& err);

std::vector<std::string> built_inference_cases();
std::vector<std::string> built_engines();

}  // namespace xpuperf::infer
