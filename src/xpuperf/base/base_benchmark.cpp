#include "xpuperf/base/base_benchmark.h"

#include <algorithm>

#include "xpuperf/core/registry.h"

namespace xpuperf::base {

namespace {
// Registry keys are "metric:backend" (metric names have no ':').
std::string key_of(const std::string& metric, const std::string& backend) {
  return metric + ":" + backend;
}
}  // namespace

bool register_base(const std::string& metric, const std::string& backend, BaseFactory factory) {
  return Registry<BaseBenchmark>::instance().add(key_of(metric, backend), std::move(factory));
}

std::unique_ptr<BaseBenchmark> make_base(const std::string& metric, const std::string& backend) {
  return Registry<BaseBenchmark>::instance().make(key_of(metric, backend));
}

std::vector<std::string> base_backends(const std::string& metric) {
  std::vector<std::string> out;
  for (const auto& key : Registry<BaseBenchmark>::instance().keys())
    if (key.rfind(metric + ":", 0) == 0) out.push_back(key.substr(metric.size() + 1));
  return out;
}

}  // namespace xpuperf::base
