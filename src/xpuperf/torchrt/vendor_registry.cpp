#include "xpuperf/torchrt/vendor_registry.h"

#include <map>
#include <mutex>

namespace xpuperf::torchrt {
namespace {

struct Backends {
  std::mutex mutex;
  std::map<std::string, CollectiveFactory> factories;
};

Backends& backends() {
  static Backends b;
  return b;
}

}  // namespace

void register_collective_backend(const std::string& name, CollectiveFactory factory) {
  auto& b = backends();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.factories[name] = std::move(factory);
}

const CollectiveFactory* find_collective_backend(const std::string& name) {
  auto& b = backends();
  std::lock_guard<std::mutex> lock(b.mutex);
  const auto it = b.factories.find(name);
  return it == b.factories.end() ? nullptr : &it->second;
}

std::vector<std::string> registered_collective_backends() {
  auto& b = backends();
  std::lock_guard<std::mutex> lock(b.mutex);
  std::vector<std::string> names;
  for (const auto& [name, factory] : b.factories) names.push_back(name);
  return names;
}

}  // namespace xpuperf::torchrt
