#include "xpuperf/infer/inference_case.h"

#include "xpuperf/core/registry.h"

namespace xpuperf::infer {

bool register_inference_case(const std::string& name, const std::string& framework, InferenceCaseFactory factory) {
  return Registry<InferenceCase>::instance().add(name + ":" + framework, std::move(factory));
}

std::unique_ptr<InferenceCase> make_inference_case(const std::string& name, const std::string& framework) {
  return Registry<InferenceCase>::instance().make(name + ":" + framework);
}

std::vector<std::string> registered_inference_cases() {
  return Registry<InferenceCase>::instance().keys();
}

}  // namespace xpuperf::infer
