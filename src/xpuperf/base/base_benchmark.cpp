#include "xpuperf/base/base_benchmark.h"

#include <algorithm>
#include <chrono>
#include <set>

namespace xpuperf::base {

namespace {
std::vector<BaseRegistration>& registry() {
  static std::vector<BaseRegistration> r;
  return r;
}
}  // namespace

bool register_base(const std::string& metric, const std::string& backend, BaseFactory factory) {
  registry().push_back({metric, backend, std::move(factory)});
  return true;
}

const std::vector<BaseRegistration>& base_registry() {
  return registry();
}

std::unique_ptr<BaseBenchmark> make_base(const std::string& metric, const std::string& backend) {
  for (const auto& r : registry())
    if (r.metric == metric && r.backend == backend) return r.factory();
  return nullptr;
}

std::vector<std::string> built_base_metrics() {
  std::set<std::string> names;
  for (const auto& r : registry()) names.insert(r.metric);
  return {names.begin(), names.end()};
}

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double best_of(const std::vector<double>& values) {
  return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
}

}  // namespace xpuperf::base
