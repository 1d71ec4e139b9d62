#include <map>

#include "xpuperf/infer/engine.h"
#include "xpuperf/infer/inference_case.h"

namespace xpuperf::infer {

namespace {
std::map<std::string, InferenceCaseFactory>& cases() {
  static std::map<std::string, InferenceCaseFactory> r;
  return r;
}
std::map<std::string, EngineFactory>& engines() {
  static std::map<std::string, EngineFactory> r;
  return r;
}
}  // namespace

bool register_inference_case(const std::string& name, const std::string& framework, InferenceCaseFactory factory) {
  cases()[name + ":" + framework] = std::move(factory);
  return true;
}

std::unique_ptr<InferenceCase> make_inference_case(const std::string& name, const std::string& framework) {
  const auto it = cases().find(name + ":" + framework);
  return it == cases().end() ? nullptr : it->second();
}

std::vector<std::string> registered_inference_cases() {
  std::vector<std::string> out;
  for (const auto& [key, factory] : cases()) out.push_back(key);
  return out;
}

bool register_engine(const std::string& name, EngineFactory factory) {
  engines()[name] = std::move(factory);
  return true;
}

std::unique_ptr<Engine> make_engine(const std::string& name) {
  const auto it = engines().find(name);
  return it == engines().end() ? nullptr : it->second();
}

std::vector<std::string> registered_engines() {
  std::vector<std::string> out;
  for (const auto& [key, factory] : engines()) out.push_back(key);
  return out;
}

}  // namespace xpuperf::infer
