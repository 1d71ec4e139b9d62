#include "xpuperf/train/training_case.h"

#include "xpuperf/core/registry.h"

namespace xpuperf::train {

void MetricSums::add(const std::string& name, double sum, double count) {
  auto& entry = sums_[name];
  entry.first += sum;
  entry.second += count;
}

std::map<std::string, double> MetricSums::values() const {
  std::map<std::string, double> out;
  for (const auto& [name, s] : sums_) out[name] = s.second > 0 ? s.first / s.second : 0.0;
  return out;
}

bool register_training_case(const std::string& model, const std::string& framework, TrainingCaseFactory factory) {
  return Registry<TrainingCase>::instance().add(model + ":" + framework, std::move(factory));
}

std::unique_ptr<TrainingCase> make_training_case(const std::string& model, const std::string& framework) {
  return Registry<TrainingCase>::instance().make(model + ":" + framework);
}

std::vector<std::string> registered_training_cases() {
  return Registry<TrainingCase>::instance().keys();
}

}  // namespace xpuperf::train
