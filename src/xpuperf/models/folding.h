#pragma once
// Batch norm folded into the convolution before it, for inference (the libtorch-graph engine's
// first pass): w' = w·γ/√(σ²+ε), b' = β + (b − μ)·γ/√(σ²+ε). A model whose blocks implement
// FoldsBatchNorm is folded by fold_all_batchnorm; its forward then runs the FoldedConv calls,
// which on CUDA can fuse bias, residual add and ReLU into one cuDNN convolution.

#include <torch/torch.h>

#include <vector>

namespace xpuperf::models {

// One folded convolution: the module's weight, scaled in place, and a bias registered as a
// buffer of the block (so that .to(device/dtype) moves it).
class FoldedConv {
 public:
  FoldedConv() = default;
  // Folds `bn` into `conv` and registers the bias on `owner` as `bias_name`.
  FoldedConv(torch::nn::Conv2dImpl& conv, const torch::nn::BatchNorm2dImpl& bn, torch::nn::Module& owner,
             const std::string& bias_name, bool cudnn_fusion);

  torch::Tensor operator()(const torch::Tensor& x) const;                        // conv + bias
  torch::Tensor relu(const torch::Tensor& x) const;                              // relu(conv + bias)
  torch::Tensor add_relu(const torch::Tensor& x, const torch::Tensor& z) const;  // relu(conv + bias + z)

 private:
  bool fused(const torch::Tensor& x) const { return cudnn_fusion_ && x.is_cuda(); }
  torch::Tensor weight_, bias_;
  std::vector<std::int64_t> stride_, padding_, dilation_;
  std::int64_t groups_ = 1;
  bool cudnn_fusion_ = false;
};

struct FoldOptions {
  bool cudnn_fusion = false;  // conv+bias(+add)+ReLU as one cuDNN call on CUDA
};

class FoldsBatchNorm {
 public:
  virtual ~FoldsBatchNorm() = default;
  virtual void fold_batchnorm(const FoldOptions& options) = 0;
};

// Folds every block of `model` that implements FoldsBatchNorm; returns how many did.
int fold_all_batchnorm(torch::nn::Module& model, const FoldOptions& options);

}  // namespace xpuperf::models
