// LeNet-5 inference on Fashion-MNIST's test set: the model of the training case (a checkpoint
// it saved loads here), top-1 accuracy judged on the CPU.

#include "xpuperf/models/lenet5.h"

#include <torch/torch.h>

#include <filesystem>

#include "xpuperf/datasets/fashion_mnist.h"
#include "xpuperf/infer/case_weights.h"
#include "xpuperf/infer/inference_case.h"
#ifdef XPUPERF_HAVE_ONNX
#include "xpuperf/infer/onnx_weights.h"
#endif

namespace xpuperf::cases {
namespace {

class LeNet5Inference : public infer::InferenceCase {
 public:
  infer::Batches build_dataloader(const infer::InferContext& ctx) override {
    torch::Tensor images, labels;
    std::string description;
    if (ctx.config.get_bool("synthetic_data")) {
      auto gen = at::detail::createCPUGenerator(1234);
      images = torch::randn({10000, 1, 28, 28}, gen);
      labels = torch::randint(datasets::kFashionMnistClasses, {10000}, gen, torch::TensorOptions().dtype(torch::kLong));
      description = "synthetic: 10000 random images and labels (throughput only, no accuracy)";
    } else {
      const std::string dir = ctx.config.get_string("data_dir");
      if (dir.empty())
        throw ConfigError(
            "lenet5 needs data_dir: the folder with Fashion-MNIST's IDX files (--data-dir; on Debian: apt-get "
            "install dataset-fashion-mnist), or synthetic_data: true");
      datasets::FashionMnist set = datasets::load_fashion_mnist(dir, ctx.config.get_string("eval_data"));
      images = set.images, labels = set.labels;
      description = "Fashion-MNIST test set, " + set.description;
    }
    const std::int64_t batch = ctx.config.get_int("batch_size");
    if (batch <= 0) throw ConfigError("batch_size must be positive");
    return infer::Batches::in_memory(images, labels, batch, description);
  }

  std::shared_ptr<torch::nn::Module> create_model(const infer::InferContext& ctx,
                                                  const std::string& checkpoint) override {
    torch::manual_seed(1234);
    models::LeNet5 model;
    const std::string path = checkpoint.empty() ? ctx.config.get_string("checkpoint") : checkpoint;
    if (!path.empty() && !std::filesystem::exists(path))
      throw ConfigError("checkpoint '" + path +
                        "' does not exist (write one with xpuperf train --case lenet5 --set save_checkpoint=FILE)");
    caveat_ = infer::load_case_weights(
        *model, ctx, path,
        "train one with xpuperf train --case lenet5 --set save_checkpoint=FILE and set checkpoint: FILE");
    return model.ptr();
  }

  torch::Tensor model_forward(torch::nn::Module& model, const torch::Tensor& input) override {
    return dynamic_cast<models::LeNet5Impl&>(model).forward(input);
  }

  void evaluator(const torch::Tensor& outputs, const torch::Tensor& labels, infer::Evaluation& e) override {
    infer::count_top1(outputs, labels, e);
  }

#ifdef XPUPERF_HAVE_ONNX
  // The same layers as models::LeNet5Impl::forward, as ONNX nodes.
  std::string export_model(torch::nn::Module& module, const infer::InferContext&, const std::string& dir) override {
    using infer::onnx_export::Attribute;
    auto& m = dynamic_cast<models::LeNet5Impl&>(module);
    infer::onnx_export::Graph g("lenet5");
    infer::onnx_export::add_weights(g, m);
    const auto kernel5 = Attribute::ints_of("kernel_shape", {5, 5});
    const std::vector<Attribute> pool = {Attribute::ints_of("kernel_shape", {2, 2}),
                                         Attribute::ints_of("strides", {2, 2})};
    g.input("image", {1, 28, 28});
    g.node("Conv", {"image", "conv1.weight", "conv1.bias"}, "conv1",
           {kernel5, Attribute::ints_of("pads", {2, 2, 2, 2})});
    g.node("Relu", {"conv1"}, "relu1");
    g.node("MaxPool", {"relu1"}, "pool1", pool);
    g.node("Conv", {"pool1", "conv2.weight", "conv2.bias"}, "conv2", {kernel5});
    g.node("Relu", {"conv2"}, "relu2");
    g.node("MaxPool", {"relu2"}, "pool2", pool);
    g.node("Flatten", {"pool2"}, "flat", {Attribute::int_of("axis", 1)});
    g.node("Gemm", {"flat", "fc1.weight", "fc1.bias"}, "fc1", {Attribute::int_of("transB", 1)});
    g.node("Relu", {"fc1"}, "relu3");
    g.node("Gemm", {"relu3", "fc2.weight", "fc2.bias"}, "fc2", {Attribute::int_of("transB", 1)});
    g.node("Relu", {"fc2"}, "relu4");
    g.node("Gemm", {"relu4", "fc3.weight", "fc3.bias"}, "logits", {Attribute::int_of("transB", 1)});
    g.output("logits", {datasets::kFashionMnistClasses});
    const std::string path = dir + "/lenet5.onnx";
    g.save(path);
    return path;
  }
#endif

  double flops_per_sample() const override {
    return 2 * models::LeNet5Impl::forward_macs();
  }
  std::string caveat() const override {
    return caveat_;
  }

 private:
  std::string caveat_;
};

XPUPERF_REGISTER_INFERENCE_CASE("lenet5", "libtorch", LeNet5Inference);

}  // namespace
}  // namespace xpuperf::cases
