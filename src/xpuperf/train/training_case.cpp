#include "xpuperf/train/training_case.h"

#include "xpuperf/core/registry.h"

namespace xpuperf::train {

TensorDataset::TensorDataset(std::vector<torch::Tensor> tensors, std::string description)
    : tensors_(std::move(tensors)), description_(std::move(description)) {
  TORCH_CHECK(!tensors_.empty(), "a TensorDataset needs at least one tensor");
  for (const auto& t : tensors_) TORCH_CHECK(t.size(0) == tensors_[0].size(0), "tensors differ in dimension 0");
}

Batch TensorDataset::get(const torch::Tensor& indices) const {
  Batch batch;
  for (const auto& t : tensors_) batch.push_back(t.index_select(0, indices));
  return batch;
}

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
