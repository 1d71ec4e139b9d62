// LeNet-5 on Fashion-MNIST: the model, the data and the metrics; the runtime does the rest.

#include <torch/torch.h>

#include "xpuperf/data/idx.h"
#include "xpuperf/train/training_case.h"

namespace xpuperf::cases {
namespace {

// Fashion-MNIST's training-set pixel mean and standard deviation (of values scaled to 0..1).
constexpr double kPixelMean = 0.2860;
constexpr double kPixelStd = 0.3530;
constexpr int kClasses = 10;

// LeNet-5 with ReLU and max pooling: conv(1→6, 5×5, pad 2) → pool → conv(6→16, 5×5) → pool →
// fc 400→120 → fc 120→84 → fc 84→10.
struct LeNet5Impl : torch::nn::Module {
  torch::nn::Conv2d conv1{torch::nn::Conv2dOptions(1, 6, 5).padding(2)};
  torch::nn::Conv2d conv2{torch::nn::Conv2dOptions(6, 16, 5)};
  torch::nn::Linear fc1{16 * 5 * 5, 120}, fc2{120, 84}, fc3{84, kClasses};

  LeNet5Impl() {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_module("fc3", fc3);
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    x = x.flatten(1);
    x = torch::relu(fc1(x));
    x = torch::relu(fc2(x));
    return fc3(x);
  }

  // Multiply-accumulates of one forward pass, from the layer shapes.
  static double forward_macs() {
    const double conv1_macs = 28.0 * 28 * 6 * (1 * 5 * 5);
    const double conv2_macs = 10.0 * 10 * 16 * (6 * 5 * 5);
    const double fc_macs = 400.0 * 120 + 120.0 * 84 + 84.0 * kClasses;
    return conv1_macs + conv2_macs + fc_macs;
  }
};
TORCH_MODULE(LeNet5);

std::shared_ptr<train::Dataset> load_split(const std::string& dir, const std::string& prefix, const std::string& what) {
  const data::IdxImageSet set = data::read_idx_image_set(dir, prefix, kClasses);
  if (set.images.shape[1] != 28 || set.images.shape[2] != 28)
    throw data::DataError(set.images.path + ": images are " + std::to_string(set.images.shape[1]) + "x" +
                          std::to_string(set.images.shape[2]) + ", Fashion-MNIST's are 28x28");
  const std::int64_t n = set.images.shape[0];
  auto images = torch::from_blob(const_cast<std::uint8_t*>(set.images.values.data()), {n, 1, 28, 28}, torch::kUInt8)
                    .to(torch::kFloat)
                    .div_(255.0)
                    .sub_(kPixelMean)
                    .div_(kPixelStd);
  auto labels =
      torch::from_blob(const_cast<std::uint8_t*>(set.labels.values.data()), {n}, torch::kUInt8).to(torch::kLong);
  return std::make_shared<train::TensorDataset>(
      std::vector<torch::Tensor>{images, labels},
      "Fashion-MNIST " + what + ", " + std::to_string(n) + " images from " + set.images.path);
}

std::shared_ptr<train::Dataset> synthetic_split(std::int64_t n, std::uint64_t seed, const std::string& what) {
  auto gen = at::detail::createCPUGenerator(seed);
  auto images = torch::randn({n, 1, 28, 28}, gen);
  auto labels = torch::randint(kClasses, {n}, gen, torch::TensorOptions().dtype(torch::kLong));
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
    model_ = LeNet5();
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

  double train_flops_per_sample() const override { return 3 * 2 * LeNet5Impl::forward_macs(); }

 private:
  LeNet5 model_{nullptr};
};

XPUPERF_REGISTER_TRAINING_CASE("lenet5", "libtorch", LeNet5Case);

}  // namespace
}  // namespace xpuperf::cases
