#pragma once
// ResNet-50 (v1.5: the stride on the 3×3 convolution), laid out and named as torchvision's
// resnet50, so that its state_dict (torch.save(dict(model.state_dict()), F)) loads here unchanged:
// 25,557,032 parameters. Each block folds its batch norms for the libtorch-graph engine; in
// training, `fused_kernels` runs each batch norm with its ReLU and residual add as the batch norm
// kernels (batch_norm_act.h), and the stem's max pool as the max pool kernels (max_pool.h).

#include <torch/torch.h>

#include "xpuperf/models/batch_norm_act.h"
#include "xpuperf/models/folding.h"
#include "xpuperf/models/max_pool.h"

namespace xpuperf::models {

inline torch::nn::Conv2d resnet_conv(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

struct BottleneckImpl : torch::nn::Module, models::FoldsBatchNorm {
  static constexpr std::int64_t kExpansion = 4;
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  torch::nn::Sequential downsample{nullptr};
  models::FoldedConv f1, f2, f3, fdown;
  bool folded = false;
  bool fused_kernels = false;

  BottleneckImpl(std::int64_t in, std::int64_t width, std::int64_t stride) {
    const std::int64_t out = width * kExpansion;
    conv1 = register_module("conv1", resnet_conv(in, width, 1, 1));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(width));
    conv2 = register_module("conv2", resnet_conv(width, width, 3, stride));
    bn2 = register_module("bn2", torch::nn::BatchNorm2d(width));
    conv3 = register_module("conv3", resnet_conv(width, out, 1, 1));
    bn3 = register_module("bn3", torch::nn::BatchNorm2d(out));
    if (stride != 1 || in != out)
      downsample = register_module("downsample",
                                   torch::nn::Sequential(resnet_conv(in, out, 1, stride), torch::nn::BatchNorm2d(out)));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    if (folded) {
      const torch::Tensor identity = downsample ? fdown(x) : x;
      return f3.add_relu(f2.relu(f1.relu(x)), identity);
    }
    if (fused_kernels) {
      using fused::Activation;
      torch::Tensor y = fused::batch_norm_act(conv1(x), *bn1, {}, Activation::Relu, true);
      y = fused::batch_norm_act(conv2(y), *bn2, {}, Activation::Relu, true);
      const torch::Tensor identity =
          downsample ? fused::batch_norm_act(downsample[0]->as<torch::nn::Conv2d>()->forward(x),
                                             *downsample[1]->as<torch::nn::BatchNorm2d>(), {}, Activation::None, true)
                     : x;
      return fused::batch_norm_act(conv3(y), *bn3, identity, Activation::Relu, true);
    }
    torch::Tensor y = torch::relu(bn1(conv1(x)));
    y = torch::relu(bn2(conv2(y)));
    y = bn3(conv3(y));
    return torch::relu(y + (downsample ? downsample->forward(x) : x));
  }

  void fold_batchnorm(const models::FoldOptions& o) override {
    if (folded) return;
    f1 = models::FoldedConv(*conv1, *bn1, *this, "folded_bias1", o.cudnn_fusion);
    f2 = models::FoldedConv(*conv2, *bn2, *this, "folded_bias2", o.cudnn_fusion);
    f3 = models::FoldedConv(*conv3, *bn3, *this, "folded_bias3", o.cudnn_fusion);
    if (downsample)
      fdown = models::FoldedConv(*downsample[0]->as<torch::nn::Conv2d>(), *downsample[1]->as<torch::nn::BatchNorm2d>(),
                                 *this, "folded_bias_down", o.cudnn_fusion);
    folded = true;
  }
};
TORCH_MODULE(Bottleneck);

struct ResNet50Impl : torch::nn::Module, models::FoldsBatchNorm {
  static constexpr std::int64_t kClasses = 1000;  // ImageNet's, torchvision's default
  std::int64_t classes;
  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  torch::nn::Sequential layer1{nullptr}, layer2{nullptr}, layer3{nullptr}, layer4{nullptr};
  torch::nn::Linear fc{nullptr};
  models::FoldedConv fstem;
  bool folded = false;
  bool fused_kernels = false;

  explicit ResNet50Impl(std::int64_t classes_ = kClasses) : classes(classes_) {
    conv1 = register_module("conv1", resnet_conv(3, 64, 7, 2));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(64));
    std::int64_t in = 64;
    auto layer = [&](std::int64_t width, int blocks, std::int64_t stride) {
      torch::nn::Sequential s;
      for (int b = 0; b < blocks; ++b) {
        s->push_back(Bottleneck(in, width, b == 0 ? stride : 1));
        in = width * BottleneckImpl::kExpansion;
      }
      return s;
    };
    layer1 = register_module("layer1", layer(64, 3, 1));
    layer2 = register_module("layer2", layer(128, 4, 2));
    layer3 = register_module("layer3", layer(256, 6, 2));
    layer4 = register_module("layer4", layer(512, 3, 2));
    fc = register_module("fc", torch::nn::Linear(512 * BottleneckImpl::kExpansion, classes));
    // torchvision's initialisation, for runs without a checkpoint.
    for (auto& m : modules(false)) {
      if (auto* c = m->as<torch::nn::Conv2d>()) torch::nn::init::kaiming_normal_(c->weight, 0, torch::kFanOut);
    }
  }

  torch::Tensor forward(torch::Tensor x) {
    x = folded ? fstem.relu(x) : fused::batch_norm_act(conv1(x), *bn1, {}, fused::Activation::Relu, fused_kernels);
    x = fused::max_pool2d(x, 3, 2, 1, fused_kernels && !folded);
    x = layer4->forward(layer3->forward(layer2->forward(layer1->forward(x))));
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc(x);
  }

  // Training's batch norms (with their ReLU and residual add) as the batch norm kernels where they
  // apply (batch_norm_act.h), or ATen's operators.
  void use_fused_kernels(bool on) {
    fused_kernels = on;
    for (auto& m : modules(false))
      if (auto* b = m->as<Bottleneck>()) b->fused_kernels = on;
  }

  void fold_batchnorm(const models::FoldOptions& o) override {
    if (folded) return;
    fstem = models::FoldedConv(*conv1, *bn1, *this, "folded_bias_stem", o.cudnn_fusion);
    folded = true;
  }

  // Multiply-accumulates of one 224×224 forward pass (convolutions and fc), from the layer shapes:
  // 4,089,184,256.
  static double forward_macs(std::int64_t outputs = kClasses) {
    double size = 112;  // after the stem's stride 2
    double macs = size * size * 64 * 3 * 7 * 7;
    size /= 2;  // max pool
    double in = 64;
    const double widths[] = {64, 128, 256, 512};
    const int blocks[] = {3, 4, 6, 3};
    for (int l = 0; l < 4; ++l) {
      for (int b = 0; b < blocks[l]; ++b) {
        const double w = widths[l], out = w * 4;
        const double out_size = (b == 0 && l > 0) ? size / 2 : size;
        macs += size * size * w * in;                        // conv1 1×1
        macs += out_size * out_size * w * w * 9;             // conv2 3×3 (strided)
        macs += out_size * out_size * out * w;               // conv3 1×1
        if (b == 0) macs += out_size * out_size * out * in;  // downsample
        in = out;
        size = out_size;
      }
    }
    return macs + 2048.0 * static_cast<double>(outputs);
  }
};
TORCH_MODULE(ResNet50);

}  // namespace xpuperf::models
