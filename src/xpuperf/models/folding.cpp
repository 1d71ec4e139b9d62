#include "xpuperf/models/folding.h"

#include <torch/version.h>

#include <stdexcept>
#include <variant>

#include "xpuperf/torchrt/compat.h"

namespace xpuperf::models {

FoldedConv::FoldedConv(torch::nn::Conv2dImpl& conv, const torch::nn::BatchNorm2dImpl& bn, torch::nn::Module& owner,
                       const std::string& bias_name, bool cudnn_fusion)
    : cudnn_fusion_(cudnn_fusion) {
  const torch::NoGradGuard no_grad;
  const auto* padding = compat::variant_get_if<torch::ExpandingArray<2>>(&conv.options.padding());
  if (!padding) throw std::runtime_error("batch-norm folding needs a convolution with explicit padding");
  if (!bn.options.track_running_stats())
    throw std::runtime_error("batch-norm folding needs running statistics (track_running_stats)");
  const torch::Tensor scale = bn.weight / torch::sqrt(bn.running_var + bn.options.eps());
  conv.weight.mul_(scale.reshape({-1, 1, 1, 1}));
  const torch::Tensor conv_bias = conv.bias.defined() ? conv.bias : torch::zeros_like(bn.running_mean);
  torch::Tensor bias = bn.bias + (conv_bias - bn.running_mean) * scale;
  weight_ = conv.weight;
  bias_ = owner.register_buffer(bias_name, bias.contiguous());
  const auto stride = conv.options.stride(), dilation = conv.options.dilation();
  stride_.assign(stride->begin(), stride->end());
  padding_.assign((*padding)->begin(), (*padding)->end());
  dilation_.assign(dilation->begin(), dilation->end());
  groups_ = conv.options.groups();
}

torch::Tensor FoldedConv::operator()(const torch::Tensor& x) const {
  return torch::conv2d(x, weight_, bias_, stride_, padding_, dilation_, groups_);
}

torch::Tensor FoldedConv::relu(const torch::Tensor& x) const {
  if (fused(x)) return at::cudnn_convolution_relu(x, weight_, bias_, stride_, padding_, dilation_, groups_);
  torch::Tensor y = (*this)(x);
  return y.relu_();
}

torch::Tensor FoldedConv::add_relu(const torch::Tensor& x, const torch::Tensor& z) const {
  if (fused(x)) return at::cudnn_convolution_add_relu(x, weight_, z, 1.0, bias_, stride_, padding_, dilation_, groups_);
  torch::Tensor y = (*this)(x);
  return y.add_(z).relu_();
}

int fold_all_batchnorm(torch::nn::Module& model, const FoldOptions& options) {
  int folded = 0;
  for (const auto& module : model.modules(/*include_self=*/true))
    if (auto* block = dynamic_cast<FoldsBatchNorm*>(module.get())) {
      block->fold_batchnorm(options);
      ++folded;
    }
  return folded;
}

}  // namespace xpuperf::models
