// LeNet-5 on Fashion-MNIST: the data and the metrics (the model: models/lenet5.h, shared with the
// inference case); the runtime does the rest.

#include "xpuperf/models/lenet5.h"

#include <torch/torch.h>

#include "xpuperf/datasets/fashion_mnist.h"
#include "xpuperf/train/training_case.h"

namespace xpuperf::cases {
namespace {

std::shared_ptr<train::Dataset> load_split(const std::string& dir, const std::string& prefix, const std::string& what) {
  datasets::FashionMnist set = datasets::load_fashion_mnist(dir, prefix);
  return std::make_shared<train::TensorDataset>(std::vector<torch::Tensor>{set.images, set.labels},
                                                "Fashion-MNIST " + what + ", " + set.description);
}

std::shared_ptr<train::Dataset> synthetic_split(std::int64_t n, std::uint64_t seed, const std::string& what) {
  auto gen = at::detail::createCPUGenerator(seed);
  auto images = torch::randn({n, 1, 28, 28}, gen);
  auto labels = torch::randint(datasets::kFashionMnistClasses, {n}, gen, torch::TensorOptions().dtype(torch::kLong));
  return std::make_shared<train::TensorDataset>(
      std::vector<torch::Tensor>{images, labels},
      "synthetic " + what + " (" + std::to_string(n) + " random images and labels: throughput only, no accuracy)");
}

class LeNet5Case : public train::TrainingCase {
 public:
  train::Datasets datasets(const train::CaseContext& ctx) override {
    if (ctx.config.get_bool("synthetic_data", false)) {
      const auto seed = static_cast<std::uint64_t>(ctx.config.get_int("seed", 1234));
      return {synthetic_split(60000, seed, "train"), synthetic_split(10000, seed + 1, "eval")};
    }
    const std::string dir = ctx.config.get_string("data_dir");
    if (dir.empty())
      throw ConfigError(
          "lenet5 needs data_dir: the folder with Fashion-MNIST's IDX files (on Debian: apt-get install "
          "dataset-fashion-mnist, then /usr/share/datasets/fashion-mnist), or synthetic_data: true");
    return {load_split(dir, ctx.config.get_string("train_data"), "train"),
            load_split(dir, ctx.config.get_string("eval_data"), "test")};
  }

  std::shared_ptr<torch::nn::Module> model(const train::CaseContext& ctx) override {
    model_ = models::LeNet5();
    model_->to(ctx.device);
    return model_.ptr();
  }

  torch::Tensor forward_step(const train::Batch& batch) override {
    return torch::cross_entropy_loss(model_->forward(batch[0]), batch[1]);
  }

  void evaluate(const train::Batch& batch, train::MetricSums& sums) override {
    const auto logits = model_->forward(batch[0]).to(torch::kFloat);
    const auto n = static_cast<double>(batch[1].size(0));
    const auto loss = torch::nn::functional::cross_entropy(
        logits, batch[1], torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    sums.add("accuracy", logits.argmax(1).eq(batch[1]).sum().item<double>(), n);
    sums.add("loss", loss.item<double>(), n);
  }

  double train_flops_per_sample() const override { return 3 * 2 * models::LeNet5Impl::forward_macs(); }

 private:
  models::LeNet5 model_{nullptr};
};

XPUPERF_REGISTER_TRAINING_CASE("lenet5", "libtorch", LeNet5Case);

}  // namespace
}  // namespace xpuperf::cases
