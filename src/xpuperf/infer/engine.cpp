#include "xpuperf/infer/engine.h"

#include "xpuperf/core/registry.h"

namespace xpuperf::infer {

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
