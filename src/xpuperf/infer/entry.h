#pragma once
// `xpuperf infer`, run by xpuperf-torch for the CLI (cli/torch_entry.h): the seven steps of FlagPerf's inference
// framework for one inference case.

#include <ostream>
#include <string>
#include <vector>

#include "xpuperf/core/torch_requests.h"

namespace xpuperf::infer {

// Runs the pipeline, printing PerfLog events (one INFER_STEP per step, ran or skipped and why,
// then FINISHED with the four throughputs, both accuracies, MFU, foo_time and latency) and a
// table. Returns 0 done, 1 a user-caused error (printed), 3 the case is not built in.
int run_inference(const InferenceRequest& request, std::ostream& out, std::ostream& err);

std::vector<std::string> built_inference_cases();
std::vector<std::string> built_engines();

}  // namespace xpuperf::infer
