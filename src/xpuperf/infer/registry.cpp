#include "xpuperf/core/registry.h"

#include "xpuperf/infer/engine.h"
#include "xpuperf/infer/inference_case.h"

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

bool register_engine(const std::string& name, EngineFactory factory) {
  return Registry<Engine>::instance().add(name, std::move(factory));
}

std::unique_ptr<Engine> make_engine(const std::string& name) {
  return Registry<Engine>::instance().make(name);
}

std::vector<std::string> registered_engines() {
  return Registry<Engine>::instance().keys();
}

}  // namespace xpuperf::infer
