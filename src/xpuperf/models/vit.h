#pragma once
// Vision Transformer (Dosovitskiy et al.), laid out and named as torchvision's
// VisionTransformer, so that a torchvision state_dict (torch.save(dict(model.state_dict()), F))
// loads unchanged: vit_b_16 (patch 16, 12 layers, width 768, 12 heads, MLP 3072) has 86,567,656
// parameters. The encoder blocks are modules of their own, so a later tensor-parallel or
// checkpointing switch can wrap them.

#include <torch/torch.h>

#include <cstdint>
#include <utility>

#include "xpuperf/parallel/activation_checkpoint.h"
#include "xpuperf/parallel/parallel_linear.h"

namespace xpuperf::models {

struct ViTConfig {
  std::int64_t image_size = 224, patch_size = 16, layers = 12, hidden = 768, heads = 12, mlp = 3072;
  std::int64_t classes = 1000;
  double dropout = 0.0, attention_dropout = 0.0;

  static ViTConfig b16() { return {}; }
  static ViTConfig l16() { return {224, 16, 24, 1024, 16, 4096, 1000, 0.0, 0.0}; }
  std::int64_t tokens() const { return (image_size / patch_size) * (image_size / patch_size) + 1; }
  // Multiply-adds of one image's forward pass × 2 (what MFU counts): the patch projection, the
  // linears and the attention products; norms, softmax and GELU are left out, as is usual.
  double forward_flops() const;
};

// torch.nn.MultiheadAttention's parameters (in_proj_weight, in_proj_bias, out_proj), batch first.
// The packed in_proj is column-parallel once split (this rank's heads of q, k and v), out_proj
// row-parallel.
struct SelfAttentionImpl : torch::nn::Module, parallel::TensorParallelLayer {
  SelfAttentionImpl(std::int64_t hidden, std::int64_t heads, double dropout);
  torch::Tensor forward(const torch::Tensor& x);  // (batch, tokens, hidden)
  void split(std::shared_ptr<parallel::TensorParallel> group);
  std::vector<torch::Tensor> split_parameters() const override;  // in_proj's (out_proj says its own)

  std::int64_t heads;  // this rank's
  double dropout;
  torch::Tensor in_proj_weight, in_proj_bias;
  parallel::RowParallelLinear out_proj{nullptr};
  std::shared_ptr<parallel::TensorParallel> tp;  // null: whole
};
TORCH_MODULE(SelfAttention);

// Pre-norm block: x + attention(ln_1(x)), then + mlp(ln_2(.)); mlp.0 and mlp.3 are its linears.
struct EncoderBlockImpl : torch::nn::Module {
  explicit EncoderBlockImpl(const ViTConfig& c);
  torch::Tensor forward(const torch::Tensor& x);
  // Tensor parallelism: the attention's heads and the MLP's units (mlp.0 column-, mlp.3 row-parallel).
  void split(std::shared_ptr<parallel::TensorParallel> group);

  // On CUDA, whole (not split, no adapter): ln_1 and the attention's residual add with ln_2 as the
  // LayerNorm kernels, mlp.0's bias with GELU as the bias + GELU kernel (fused_ops.h), each with its
  // backward.
  bool fused_kernels = false;
  bool runs_kernels(const torch::Tensor& input);
  // On the kernels, from the block's input as residual + dropout(delta, delta_dropout) (delta undefined:
  // the residual alone): {the stream after the attention's add, the MLP's output before its dropout},
  // which the next norm adds (EncoderImpl::forward).
  std::pair<torch::Tensor, torch::Tensor> forward_on_kernels(const torch::Tensor& residual, const torch::Tensor& delta,
                                                             double delta_dropout);
  double mlp_dropout();  // mlp.4's probability in training, else 0

  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  SelfAttention self_attention{nullptr};
  torch::nn::Sequential mlp{nullptr};
  torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(EncoderBlock);

// encoder.pos_embedding, encoder.layers.encoder_layer_<i>, encoder.ln
struct EncoderImpl : torch::nn::Module, parallel::BlockStack {
  explicit EncoderImpl(const ViTConfig& c);
  std::vector<torch::nn::Module*> blocks() override;
  torch::Tensor forward(const torch::Tensor& tokens);

  torch::Tensor pos_embedding;
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Sequential layers{nullptr};
  torch::nn::LayerNorm ln{nullptr};
};
TORCH_MODULE(Encoder);

struct VisionTransformerImpl : torch::nn::Module, parallel::TensorParallelModel {
  explicit VisionTransformerImpl(const ViTConfig& c = ViTConfig::b16());
  // Each encoder block's heads and MLP units; the patch embedding, norms and head stay whole.
  void split_for_tensor_parallel(std::shared_ptr<parallel::TensorParallel> tp) override;
  torch::Tensor forward(const torch::Tensor& images);  // (batch, 3, size, size) -> logits
  // The encoder blocks' norms, residual adds and MLP GELU as CUDA kernels where they run (EncoderBlockImpl).
  void use_fused_kernels(bool on);

  double forward_flops() const;  // config.forward_flops()

  ViTConfig config;
  torch::Tensor class_token;
  torch::nn::Conv2d conv_proj{nullptr};
  Encoder encoder{nullptr};
  torch::nn::Sequential heads{nullptr};  // heads.head
};
TORCH_MODULE(VisionTransformer);

}  // namespace xpuperf::models
