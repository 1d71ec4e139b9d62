// ResNet-50 inference: the ImageNet validation folder (<dir>/<wnid>/<image>, torchvision's
// resize-256 / centre-crop-224 / normalise) or synthetic images labelled as such; top-1 accuracy
// judged on the CPU. Weights from a torchvision state_dict or a LibTorch archive.

#include "xpuperf/models/resnet50.h"

#include <torch/torch.h>

#include "xpuperf/infer/case_weights.h"
#include "xpuperf/infer/image_batches.h"
#include "xpuperf/infer/inference_case.h"
#ifdef XPUPERF_HAVE_ONNX
#include "xpuperf/infer/onnx_weights.h"
#endif

namespace xpuperf::cases {
namespace {
using models::ResNet50;
using models::ResNet50Impl;

constexpr int kImage = 224;

class ResNet50Inference : public infer::InferenceCase {
 public:
  infer::Batches build_dataloader(const infer::InferContext& ctx) override {
    const std::int64_t batch = ctx.config.get_int("batch_size");
    if (batch <= 0) throw ConfigError("batch_size must be positive");
    if (ctx.config.get_bool("synthetic_data")) return synthetic(ctx, batch);
    return infer::image_folder_batches(ctx, "resnet50", batch, ResNet50Impl::kClasses, {256, kImage});
  }

  std::shared_ptr<torch::nn::Module> create_model(const infer::InferContext& ctx,
                                                  const std::string& checkpoint) override {
    torch::manual_seed(1234);
    ResNet50 model;
    caveat_ =
        infer::join_caveats(infer::load_case_weights(*model, ctx, checkpoint,
                                                     "give checkpoint: a torchvision resnet50 state_dict "
                                                     "(torch.save(dict(model.state_dict()), F)) or a LibTorch archive"),
                            synthetic_ ? "synthetic images: accuracy is meaningless" : "");
    return model.ptr();
  }

  torch::Tensor model_forward(torch::nn::Module& model, const torch::Tensor& input) override {
    return dynamic_cast<ResNet50Impl&>(model).forward(input);
  }

  void evaluator(const torch::Tensor& outputs, const torch::Tensor& labels, infer::Evaluation& e) override {
    e.metric = "top1_accuracy";
    infer::count_top1(outputs, labels, e);
  }

#ifdef XPUPERF_HAVE_ONNX
  // The same layers as ResNet50Impl::forward (unfolded: BatchNormalization nodes), as ONNX.
  std::string export_model(torch::nn::Module& module, const infer::InferContext&, const std::string& dir) override {
    using infer::onnx_export::Attribute;
    auto& m = dynamic_cast<ResNet50Impl&>(module);
    if (m.folded) throw std::runtime_error("resnet50's ONNX export needs the unfolded model");
    infer::onnx_export::Graph g("resnet50");
    infer::onnx_export::add_weights(g, m);
    auto conv_bn = [&](const std::string& conv, const std::string& bn, const std::string& in, std::int64_t kernel,
                       std::int64_t stride, const std::string& out) {
      const std::int64_t pad = kernel / 2;
      g.node("Conv", {in, conv + ".weight"}, out + ".conv",
             {Attribute::ints_of("kernel_shape", {kernel, kernel}), Attribute::ints_of("strides", {stride, stride}),
              Attribute::ints_of("pads", {pad, pad, pad, pad})});
      g.node("BatchNormalization",
             {out + ".conv", bn + ".weight", bn + ".bias", bn + ".running_mean", bn + ".running_var"}, out);
    };
    g.input("image", {3, kImage, kImage});
    conv_bn("conv1", "bn1", "image", 7, 2, "stem");
    g.node("Relu", {"stem"}, "stem.relu");
    g.node("MaxPool", {"stem.relu"}, "pool",
           {Attribute::ints_of("kernel_shape", {3, 3}), Attribute::ints_of("strides", {2, 2}),
            Attribute::ints_of("pads", {1, 1, 1, 1})});
    std::string x = "pool";
    const int blocks[] = {3, 4, 6, 3};
    for (int l = 0; l < 4; ++l)
      for (int b = 0; b < blocks[l]; ++b) {
        const std::string p = "layer" + std::to_string(l + 1) + "." + std::to_string(b);
        const std::int64_t stride = (b == 0 && l > 0) ? 2 : 1;
        conv_bn(p + ".conv1", p + ".bn1", x, 1, 1, p + ".a");
        g.node("Relu", {p + ".a"}, p + ".a.relu");
        conv_bn(p + ".conv2", p + ".bn2", p + ".a.relu", 3, stride, p + ".b");
        g.node("Relu", {p + ".b"}, p + ".b.relu");
        conv_bn(p + ".conv3", p + ".bn3", p + ".b.relu", 1, 1, p + ".c");
        std::string identity = x;
        if (b == 0) {
          conv_bn(p + ".downsample.0", p + ".downsample.1", x, 1, stride, p + ".down");
          identity = p + ".down";
        }
        g.node("Add", {p + ".c", identity}, p + ".sum");
        g.node("Relu", {p + ".sum"}, p + ".out");
        x = p + ".out";
      }
    g.node("GlobalAveragePool", {x}, "gap");
    g.node("Flatten", {"gap"}, "flat", {Attribute::int_of("axis", 1)});
    g.node("Gemm", {"flat", "fc.weight", "fc.bias"}, "logits", {Attribute::int_of("transB", 1)});
    g.output("logits", {ResNet50Impl::kClasses});
    const std::string path = dir + "/resnet50.onnx";
    g.save(path);
    return path;
  }
#endif

  double flops_per_sample() const override {
    return 2 * ResNet50Impl::forward_macs();
  }
  std::string caveat() const override {
    return caveat_;
  }

 private:
  infer::Batches synthetic(const infer::InferContext& ctx, std::int64_t batch) {
    synthetic_ = true;
    return infer::synthetic_image_batches(ctx, batch, ResNet50Impl::kClasses, kImage);
  }

  std::string caveat_;
  bool synthetic_ = false;
};

XPUPERF_REGISTER_INFERENCE_CASE("resnet50", "libtorch", ResNet50Inference);

}  // namespace
}  // namespace xpuperf::cases
