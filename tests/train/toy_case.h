#pragma once
// A tiny case for testing the runtime: two linearly separable classes in 4 dimensions.

#include <torch/torch.h>

#include <sstream>

#include "xpuperf/train/training_case.h"

namespace xpuperf::test {

class ToyCase : public train::TrainingCase {
 public:
  train::Datasets datasets(const train::CaseContext&) override {
    auto gen = at::detail::createCPUGenerator(7);
    auto make = [&gen](std::int64_t n) {
      auto x = torch::randn({n, 4}, gen);
      auto y = (x.matmul(torch::tensor({1.0f, -2.0f, 0.5f, 1.0f})) > 0).to(torch::kLong);
      return std::make_shared<train::TensorDataset>(std::vector<torch::Tensor>{x, y}, "toy");
    };
    return {make(256), make(128)};
  }
  std::shared_ptr<torch::nn::Module> model(const train::CaseContext& ctx) override {
    linear = torch::nn::Linear(4, 2);
    linear->to(ctx.device);
    return linear.ptr();
  }
  torch::Tensor forward_step(const train::Batch& batch) override {
    return torch::cross_entropy_loss(linear->forward(batch[0]), batch[1]);
  }
  void evaluate(const train::Batch& batch, train::MetricSums& sums) override {
    const auto logits = linear->forward(batch[0]);
    sums.add("accuracy", logits.argmax(1).eq(batch[1]).sum().item<double>(), static_cast<double>(batch[1].size(0)));
  }
  torch::nn::Linear linear{nullptr};
};

// Everything the runtime reads, with values a test can override line by line.
inline std::string toy_config(const std::string& overrides = "") {
  return "vendor: cpu\ndata_dir: \"\"\nseed: 1\ndevice: cpu\nnum_threads: 1\ntrain_batch_size: 32\n"
         "eval_batch_size: 64\noptimizer: sgd\nlr: 0.5\nmomentum: 0.0\nlr_scheduler: constant\nmax_epochs: 3\n"
         "log_freq: 2\ntarget_metric: accuracy\ntarget_value: 1.1\ndist_timeout: 20\n" +
         overrides;
}

// The toy config with `overrides` applied; later keys win, as in a vendor override.
inline Config toy_config_for(const std::string& overrides) {
  Diagnostics diags;
  std::istringstream lines(toy_config(overrides));
  Config merged("test config");
  for (std::string line; std::getline(lines, line);) {
    auto one = load_config_text(line, "test", diags);
    if (one)
      for (const auto& key : one->keys()) merged.set(key, one->at(key).value, one->at(key).source);
  }
  return merged;
}

}  // namespace xpuperf::test
