// ResNet-50 inference: the ImageNet validation folder (<dir>/<wnid>/<image>, torchvision's
// resize-256 / centre-crop-224 / normalise) or synthetic images labelled as such; top-1 accuracy
// judged on the CPU. Weights from a torchvision state_dict or a LibTorch archive.

#include "xpuperf/models/resnet50.h"

#include <torch/torch.h>

#include <algorithm>
#include <thread>

#include "xpuperf/data/idx.h"
#include "xpuperf/data/image_folder.h"
#include "xpuperf/infer/inference_case.h"
#include "xpuperf/train/weights.h"
#ifdef XPUPERF_HAVE_ONNX
#include "xpuperf/infer/onnx_weights.h"
#endif
#ifdef XPUPERF_HAVE_OPENCV
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace xpuperf::cases {
namespace {
using models::ResNet50;
using models::ResNet50Impl;

constexpr int kImage = 224;

#ifdef XPUPERF_HAVE_OPENCV
// torchvision's evaluation transform: shorter side to 256, centre crop 224, RGB, ImageNet's
// mean and standard deviation.
torch::Tensor preprocess(const std::string& path) {
  const cv::Mat bgr = cv::imread(path, cv::IMREAD_COLOR);
  if (bgr.empty()) throw data::DataError("cannot decode image " + path);
  const double scale = 256.0 / std::min(bgr.cols, bgr.rows);
  cv::Mat resized;
  cv::resize(bgr, resized,
             cv::Size(std::max(kImage, static_cast<int>(bgr.cols * scale + 0.5)),
                      std::max(kImage, static_cast<int>(bgr.rows * scale + 0.5))),
             0, 0, scale < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
  const cv::Rect crop((resized.cols - kImage) / 2, (resized.rows - kImage) / 2, kImage, kImage);
  cv::Mat rgb;
  cv::cvtColor(resized(crop), rgb, cv::COLOR_BGR2RGB);
  const torch::Tensor hwc = torch::from_blob(rgb.data, {kImage, kImage, 3}, torch::kUInt8).clone();
  const torch::Tensor mean = torch::tensor({0.485, 0.456, 0.406}).reshape({3, 1, 1});
  const torch::Tensor std = torch::tensor({0.229, 0.224, 0.225}).reshape({3, 1, 1});
  return (hwc.permute({2, 0, 1}).to(torch::kFloat).div_(255) - mean) / std;
}
#endif

class ResNet50Inference : public infer::InferenceCase {
 public:
  infer::Batches build_dataloader(const infer::InferContext& ctx) override {
    const std::int64_t batch = ctx.config.get_int("batch_size");
    if (batch <= 0) throw ConfigError("batch_size must be positive");
    if (ctx.config.get_bool("synthetic_data")) return synthetic(ctx, batch);
    const std::string dir = ctx.config.get_string("data_dir");
    if (dir.empty())
      throw ConfigError(
          "resnet50 needs data_dir: ImageNet's validation set as <dir>/<wnid>/<image> (--data-dir), or "
          "synthetic_data: true");
#ifdef XPUPERF_HAVE_OPENCV
    auto folder = std::make_shared<data::ImageFolder>(data::list_image_folder(dir));
    if (folder->classes.size() > static_cast<std::size_t>(ResNet50Impl::kClasses))
      throw data::DataError(dir + " has " + std::to_string(folder->classes.size()) + " class folders; resnet50 has " +
                            std::to_string(ResNet50Impl::kClasses) + " classes");
    const std::int64_t limit = ctx.config.get_int("max_samples", 0);
    if (limit > 0 && static_cast<std::int64_t>(folder->images.size()) > limit) folder->images.resize(limit);
    const int workers = static_cast<int>(std::max<std::int64_t>(1, ctx.config.get_int("num_workers", 1)));
    infer::Batches b;
    b.samples = static_cast<std::int64_t>(folder->images.size());
    b.batch_size = batch;
    b.count = static_cast<std::size_t>((b.samples + batch - 1) / batch);
    b.sample_shape = {3, kImage, kImage};
    b.description = "ImageNet-style folder " + dir + ": " + std::to_string(b.samples) + " images, " +
                    std::to_string(folder->classes.size()) + " classes, decoded with OpenCV by " +
                    std::to_string(workers) + " threads per batch";
    b.load = [folder, batch, workers](std::size_t i) {
      const std::int64_t at = static_cast<std::int64_t>(i) * batch;
      const std::int64_t n = std::min<std::int64_t>(batch, static_cast<std::int64_t>(folder->images.size()) - at);
      torch::Tensor images = torch::empty({n, 3, kImage, kImage});
      torch::Tensor labels = torch::empty({n}, torch::kLong);
      std::vector<std::thread> threads;
      std::vector<std::string> errors(workers);
      for (int w = 0; w < workers; ++w)
        threads.emplace_back([&, w] {
          try {
            for (std::int64_t k = w; k < n; k += workers) {
              const auto& image = folder->images[static_cast<std::size_t>(at + k)];
              images[k].copy_(preprocess(image.path));
              labels[k] = image.label;
            }
          } catch (const std::exception& e) {
            errors[w] = e.what();
          }
        });
      for (auto& t : threads) t.join();
      for (const auto& e : errors)
        if (!e.empty()) throw data::DataError(e);
      return infer::Batch{images, labels};
    };
    return b;
#else
    throw ConfigError("this build has no OpenCV to decode " + dir +
                      " (Debian: libopencv-dev, then rebuild); synthetic_data: true runs without it");
#endif
  }

  std::shared_ptr<torch::nn::Module> create_model(const infer::InferContext& ctx,
                                                  const std::string& checkpoint) override {
    torch::manual_seed(1234);
    ResNet50 model;
    const std::string path = checkpoint.empty() ? ctx.config.get_string("checkpoint") : checkpoint;
    if (path.empty()) {
      caveat_ =
          "random weights (no checkpoint): accuracy is chance; give checkpoint: a torchvision resnet50 "
          "state_dict (torch.save(dict(model.state_dict()), F)) or a LibTorch archive";
    } else {
      try {
        train::load_weights(*model, path);
      } catch (const std::runtime_error& e) {
        throw ConfigError(std::string("checkpoint: ") + e.what());
      }
    }
    if (synthetic_) caveat_ += std::string(caveat_.empty() ? "" : "; ") + "synthetic images: accuracy is meaningless";
    model->to(ctx.device);
    model->eval();
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
    const std::int64_t samples = ctx.config.get_int("synthetic_samples", 10240);
    if (samples <= 0) throw ConfigError("synthetic_samples must be positive");
    // A few distinct batches, generated once and cycled: generating 150 KB of noise per image
    // would time the random number generator, not the model.
    auto gen = at::detail::createCPUGenerator(1234);
    const std::int64_t pool = std::min<std::int64_t>(4, (samples + batch - 1) / batch);
    auto images = std::make_shared<std::vector<torch::Tensor>>();
    auto labels = std::make_shared<std::vector<torch::Tensor>>();
    for (std::int64_t i = 0; i < pool; ++i) {
      images->push_back(torch::randn({batch, 3, kImage, kImage}, gen));
      labels->push_back(torch::randint(ResNet50Impl::kClasses, {batch}, gen, torch::kLong));
    }
    infer::Batches b;
    b.samples = samples;
    b.batch_size = batch;
    b.count = static_cast<std::size_t>((samples + batch - 1) / batch);
    b.sample_shape = {3, kImage, kImage};
    b.description = "synthetic: " + std::to_string(samples) + " random 224x224 images (" + std::to_string(pool) +
                    " distinct batches, cycled), random labels (throughput only, no accuracy)";
    b.load = [images, labels, batch, samples, pool](std::size_t i) {
      const std::int64_t n = std::min<std::int64_t>(batch, samples - static_cast<std::int64_t>(i) * batch);
      const auto k = static_cast<std::size_t>(static_cast<std::int64_t>(i) % pool);
      return infer::Batch{(*images)[k].slice(0, 0, n), (*labels)[k].slice(0, 0, n)};
    };
    return b;
  }

  std::string caveat_;
  bool synthetic_ = false;
};

XPUPERF_REGISTER_INFERENCE_CASE("resnet50", "libtorch", ResNet50Inference);

}  // namespace
}  // namespace xpuperf::cases
