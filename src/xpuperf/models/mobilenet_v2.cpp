#include "xpuperf/models/mobilenet_v2.h"

#include "xpuperf/models/batch_norm_act.h"

namespace xpuperf::models {

namespace nn = torch::nn;

namespace {

// torchvision's Conv2dNormActivation: 0 conv (no bias), 1 batch norm, 2 ReLU6. A Sequential with a
// forward of its own, so that it can sit inside another Sequential.
struct ConvNormActivationImpl : nn::SequentialImpl {
  ConvNormActivationImpl(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride,
                         std::int64_t groups) {
    push_back(nn::Conv2d(
        nn::Conv2dOptions(in, out, kernel).stride(stride).padding((kernel - 1) / 2).groups(groups).bias(false)));
    push_back(nn::BatchNorm2d(out));
    push_back(nn::ReLU6());
  }
  torch::Tensor forward(torch::Tensor x) {
    return fused::batch_norm_act((*this)[0]->as<nn::Conv2d>()->forward(x), *(*this)[1]->as<nn::BatchNorm2d>(), {},
                                 fused::Activation::Relu6, fused_kernels);
  }
  bool fused_kernels = false;
};
TORCH_MODULE(ConvNormActivation);

ConvNormActivation conv_bn_relu6(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride,
                                 std::int64_t groups = 1) {
  return ConvNormActivation(in, out, kernel, stride, groups);
}

// t (expansion), c (channels), n (blocks), s (first block's stride): the paper's table 2.
struct Stage {
  std::int64_t t, c, n, s;
};
const std::vector<Stage> kStages = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                    {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
constexpr std::int64_t kStem = 32, kLast = 1280;

}  // namespace

InvertedResidualImpl::InvertedResidualImpl(std::int64_t in, std::int64_t out, std::int64_t stride,
                                           std::int64_t expand_ratio)
    : residual(stride == 1 && in == out) {
  const std::int64_t hidden = in * expand_ratio;
  conv = register_module("conv", nn::Sequential());
  if (expand_ratio != 1) conv->push_back(conv_bn_relu6(in, hidden, 1, 1));
  conv->push_back(conv_bn_relu6(hidden, hidden, 3, stride, hidden));
  conv->push_back(nn::Conv2d(nn::Conv2dOptions(hidden, out, 1).bias(false)));
  conv->push_back(nn::BatchNorm2d(out));
}

torch::Tensor InvertedResidualImpl::forward(const torch::Tensor& x) {
  if (!fused_kernels) return residual ? x + conv->forward(x) : conv->forward(x);
  // The projection's batch norm with the residual add (the layers before it run their own kernels).
  torch::Tensor h = x;
  const auto last = conv->size() - 2;
  for (std::size_t i = 0; i < last; ++i) h = conv[i]->as<ConvNormActivation>()->forward(h);
  return fused::batch_norm_act(conv[last]->as<nn::Conv2d>()->forward(h), *conv[last + 1]->as<nn::BatchNorm2d>(),
                               residual ? x : torch::Tensor(), fused::Activation::None, true);
}

void MobileNetV2Impl::use_fused_kernels(bool on) {
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* c = m->as<ConvNormActivation>()) c->fused_kernels = on;
    if (auto* r = m->as<InvertedResidual>()) r->fused_kernels = on;
  }
}

MobileNetV2Impl::MobileNetV2Impl(std::int64_t classes_, double dropout) : classes(classes_) {
  features = register_module("features", nn::Sequential());
  features->push_back(conv_bn_relu6(3, kStem, 3, 2));
  std::int64_t in = kStem;
  for (const auto& s : kStages)
    for (std::int64_t i = 0; i < s.n; ++i) {
      features->push_back(InvertedResidual(in, s.c, i == 0 ? s.s : 1, s.t));
      in = s.c;
    }
  features->push_back(conv_bn_relu6(in, kLast, 1, 1));
  classifier = register_module("classifier", nn::Sequential(nn::Dropout(dropout), nn::Linear(kLast, classes)));
  // As torchvision initialises it.
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* c = m->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut);
    } else if (auto* bn = m->as<nn::BatchNorm2d>()) {
      nn::init::ones_(bn->weight);
      nn::init::zeros_(bn->bias);
    } else if (auto* l = m->as<nn::Linear>()) {
      nn::init::normal_(l->weight, 0.0, 0.01);
      nn::init::zeros_(l->bias);
    }
  }
}

torch::Tensor MobileNetV2Impl::forward(const torch::Tensor& images) {
  auto x = features->forward(images);
  x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
  return classifier->forward(x);
}

double MobileNetV2Impl::forward_flops(std::int64_t image_size) const {
  double macs = 0;
  std::int64_t size = image_size;
  auto conv = [&](std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride, std::int64_t groups) {
    size = (size + 2 * ((kernel - 1) / 2) - kernel) / stride + 1;
    macs += static_cast<double>(out * (in / groups) * kernel * kernel * size * size);
  };
  conv(3, kStem, 3, 2, 1);
  std::int64_t in = kStem;
  for (const auto& s : kStages)
    for (std::int64_t i = 0; i < s.n; ++i) {
      const std::int64_t hidden = in * s.t;
      if (s.t != 1) conv(in, hidden, 1, 1, 1);
      conv(hidden, hidden, 3, i == 0 ? s.s : 1, hidden);
      conv(hidden, s.c, 1, 1, 1);
      in = s.c;
    }
  conv(in, kLast, 1, 1, 1);
  macs += static_cast<double>(kLast * classes);
  return 2 * macs;
}

}  // namespace xpuperf::models
