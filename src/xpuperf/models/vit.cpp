#include "xpuperf/models/vit.h"

#include <cmath>
#include <string>
#include <tuple>

#include "xpuperf/models/fused_ops.h"
#include "xpuperf/models/linear.h"
#include "xpuperf/torchrt/compat.h"

namespace xpuperf::models {

namespace nn = torch::nn;

SelfAttentionImpl::SelfAttentionImpl(std::int64_t hidden, std::int64_t heads_, double dropout_)
    : heads(heads_), dropout(dropout_) {
  TORCH_CHECK(hidden % heads == 0, "ViT: hidden size ", hidden, " is not a multiple of the ", heads, " heads");
  in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * hidden, hidden}));
  in_proj_bias = register_parameter("in_proj_bias", torch::zeros({3 * hidden}));
  out_proj = register_module("out_proj", parallel::RowParallelLinear(hidden, hidden));
  // As torch.nn.MultiheadAttention initialises itself.
  nn::init::xavier_uniform_(in_proj_weight);
  nn::init::zeros_(out_proj->bias);
}

torch::Tensor SelfAttentionImpl::forward(const torch::Tensor& x) {
  const auto b = x.size(0), t = x.size(1), width = out_proj->weight.size(1), hd = width / heads;
  // (b, t, 3 width) -> three (b, heads, t, hd), split along the last dimension: the backward is one
  // concatenation of the three gradients, where indexing a stacked view makes three zero-filled copies of
  // the projection's output and adds them (the values are the same either way).
  const auto qkv = parallel::column_parallel_linear(tp.get(), x, in_proj_weight, in_proj_bias).split(width, -1);
  const auto heads_of = [&](const torch::Tensor& part) { return part.view({b, t, heads, hd}).transpose(1, 2); };
  const auto y = compat::attention(heads_of(qkv[0]), heads_of(qkv[1]), heads_of(qkv[2]), dropout, is_training())
                     .transpose(1, 2)
                     .reshape({b, t, width});
  return out_proj(y);
}

void SelfAttentionImpl::split(std::shared_ptr<parallel::TensorParallel> group) {
  const std::int64_t parts = group->size();
  parallel::require_divides(*group, heads, "ViT's", "attention heads (num_heads)");
  torch::NoGradGuard no_grad;
  in_proj_weight.set_data(parallel::tensor_part(in_proj_weight, 0, *group, 3));
  in_proj_bias.set_data(parallel::tensor_part(in_proj_bias, 0, *group, 3));
  out_proj->split(group);
  heads /= parts;
  tp = std::move(group);
}

std::vector<torch::Tensor> SelfAttentionImpl::split_parameters() const {
  if (!tp) return {};
  return {in_proj_weight, in_proj_bias};
}

EncoderBlockImpl::EncoderBlockImpl(const ViTConfig& c) {
  ln_1 = register_module("ln_1", nn::LayerNorm(nn::LayerNormOptions({c.hidden}).eps(1e-6)));
  self_attention = register_module("self_attention", SelfAttention(c.hidden, c.heads, c.attention_dropout));
  drop = register_module("dropout", nn::Dropout(c.dropout));
  ln_2 = register_module("ln_2", nn::LayerNorm(nn::LayerNormOptions({c.hidden}).eps(1e-6)));
  // torchvision's MLPBlock: 0 Linear, 1 GELU, 2 Dropout, 3 Linear, 4 Dropout.
  mlp = register_module(
      "mlp", nn::Sequential(parallel::ColumnParallelLinear(c.hidden, c.mlp), nn::GELU(), nn::Dropout(c.dropout),
                            parallel::RowParallelLinear(c.mlp, c.hidden), nn::Dropout(c.dropout)));
  for (std::size_t i : {0u, 3u}) {
    auto& linear = *mlp[i]->as<nn::Linear>();
    nn::init::xavier_uniform_(linear.weight);
    nn::init::normal_(linear.bias, 0.0, 1e-6);
  }
}

bool EncoderBlockImpl::runs_kernels(const torch::Tensor& input) {
  // The kernels only where they run: elsewhere the layers as torchvision's, whose rounding the recorded
  // curves hold (the projection's bias inside addmm).
  auto* fc1 = mlp[0]->as<parallel::ColumnParallelLinear>();
  return fused_kernels && fused::kernels_run_after(*fc1, input, "bias_gelu");
}

double EncoderBlockImpl::mlp_dropout() {
  return is_training() ? mlp[4]->as<nn::Dropout>()->options.p() : 0.0;
}

torch::Tensor EncoderBlockImpl::forward(const torch::Tensor& input) {
  if (runs_kernels(input)) {
    const auto [x, delta] = forward_on_kernels(input, {}, 0);
    return x + mlp[4]->as<nn::Dropout>()->forward(delta);
  }
  const auto x = drop(self_attention(ln_1(input))) + input;
  // torchvision's MLPBlock, each linear through ATen's (linear.h).
  auto h = mlp[1]->as<nn::GELU>()->forward(mlp[0]->as<parallel::ColumnParallelLinear>()->forward(ln_2(x)));
  h = mlp[3]->as<parallel::RowParallelLinear>()->forward(mlp[2]->as<nn::Dropout>()->forward(h));
  return x + mlp[4]->as<nn::Dropout>()->forward(h);
}

std::pair<torch::Tensor, torch::Tensor> EncoderBlockImpl::forward_on_kernels(const torch::Tensor& residual,
                                                                             const torch::Tensor& delta,
                                                                             double delta_dropout) {
  // Under autocast the norms write their outputs in the type the products after them take.
  const auto gemm_type = fused::autocast_product_type(residual);
  // The block's input = residual + dropout(delta), and ln_1 of it, in one pass each way.
  const auto [input, normed] = fused::add_layer_norm(residual, delta, ln_1->weight, ln_1->bias, ln_1->options.eps(),
                                                     true, delta_dropout, gemm_type);
  // x = input + attention, and ln_2(x), the same way.
  const auto [x, h] = fused::add_layer_norm(input, drop(self_attention(normed)), ln_2->weight, ln_2->bias,
                                            ln_2->options.eps(), true, 0, gemm_type);
  auto* fc1 = mlp[0]->as<parallel::ColumnParallelLinear>();
  // mlp.0 without its bias (autocast's product), then its bias and GELU in one kernel each way.
  auto units = torch::matmul(h, fc1->weight.t());
  units = fused::bias_gelu(units, fc1->bias, true, fused::Gelu::Erf);
  return {x, mlp[3]->as<parallel::RowParallelLinear>()->forward(mlp[2]->as<nn::Dropout>()->forward(units))};
}

void EncoderBlockImpl::split(std::shared_ptr<parallel::TensorParallel> group) {
  auto* first = mlp[0]->as<parallel::ColumnParallelLinear>();
  const std::int64_t units = first->weight.size(0);
  parallel::require_divides(*group, units, "ViT's", "MLP units (mlp_dim)");
  self_attention->split(group);
  first->split(group);
  mlp[3]->as<parallel::RowParallelLinear>()->split(group);
}

void VisionTransformerImpl::use_fused_kernels(bool on) {
  for (const auto& layer : encoder->layers->children()) layer->as<EncoderBlock>()->fused_kernels = on;
}

void VisionTransformerImpl::split_for_tensor_parallel(std::shared_ptr<parallel::TensorParallel> tp) {
  for (const auto& layer : encoder->layers->children()) layer->as<EncoderBlock>()->split(tp);
}

EncoderImpl::EncoderImpl(const ViTConfig& c) {
  pos_embedding = register_parameter("pos_embedding", torch::empty({1, c.tokens(), c.hidden}));
  nn::init::normal_(pos_embedding, 0.0, 0.02);
  dropout = register_module("dropout", nn::Dropout(c.dropout));
  layers = register_module("layers", nn::Sequential());
  for (std::int64_t i = 0; i < c.layers; ++i) layers->push_back("encoder_layer_" + std::to_string(i), EncoderBlock(c));
  ln = register_module("ln", nn::LayerNorm(nn::LayerNormOptions({c.hidden}).eps(1e-6)));
}

torch::Tensor EncoderImpl::forward(const torch::Tensor& tokens) {
  auto x = dropout(tokens + pos_embedding);
  auto* first = layers->is_empty() ? nullptr : layers->ptr<EncoderBlockImpl>(0).get();
  if (first && first->runs_kernels(x) && !wraps_blocks()) {
    // Each block's last residual add joins the norm after it (the next block's ln_1, or ln): the
    // float stream and the bf16 MLP output added in the norm kernel's pass, forward and backward.
    torch::Tensor delta;
    double p = 0;
    for (const auto& layer : *layers) {
      auto* block = layer.get<EncoderBlock>().get();
      std::tie(x, delta) = block->forward_on_kernels(x, delta, p);
      p = block->mlp_dropout();
    }
    return fused::add_layer_norm(x, delta, ln->weight, ln->bias, ln->options.eps(), true, p).second;
  }
  for (const auto& layer : *layers) {
    EncoderBlockImpl* block = layer.get<EncoderBlock>().get();
    x = run_block(
        *block, [block](const torch::Tensor& t) { return block->forward(t); }, x);
  }
  return ln(x);
}

std::vector<torch::nn::Module*> EncoderImpl::blocks() {
  std::vector<torch::nn::Module*> list;
  for (const auto& layer : *layers) list.push_back(layer.ptr().get());
  return list;
}

VisionTransformerImpl::VisionTransformerImpl(const ViTConfig& c) : config(c) {
  TORCH_CHECK(c.image_size % c.patch_size == 0, "ViT: image size ", c.image_size, " is not a multiple of the patch ",
              c.patch_size);
  class_token = register_parameter("class_token", torch::zeros({1, 1, c.hidden}));
  conv_proj =
      register_module("conv_proj", nn::Conv2d(nn::Conv2dOptions(3, c.hidden, c.patch_size).stride(c.patch_size)));
  encoder = register_module("encoder", Encoder(c));
  heads = register_module("heads", nn::Sequential());
  heads->push_back("head", nn::Linear(c.hidden, c.classes));
  // As torchvision: a normal patch projection of std √(1/fan_in) (its trunc_normal_ cuts at ±2,
  // absolute, which this std never reaches), a zero head.
  nn::init::normal_(conv_proj->weight, 0.0, std::sqrt(1.0 / static_cast<double>(3 * c.patch_size * c.patch_size)));
  nn::init::zeros_(conv_proj->bias);
  auto& head = *heads[0]->as<nn::Linear>();
  nn::init::zeros_(head.weight);
  nn::init::zeros_(head.bias);
}

torch::Tensor VisionTransformerImpl::forward(const torch::Tensor& images) {
  const auto n = images.size(0);
  // (n, hidden, h/p, w/p) -> (n, patches, hidden), the class token first.
  auto x = conv_proj(images).flatten(2).transpose(1, 2);
  x = torch::cat({class_token.expand({n, -1, -1}), x}, 1);
  x = encoder(x);
  return heads->forward(x.select(1, 0));
}

double ViTConfig::forward_flops() const {
  const double t = static_cast<double>(tokens()), d = static_cast<double>(hidden);
  const double patches = t - 1, patch_in = 3.0 * static_cast<double>(patch_size * patch_size);
  const double per_layer = t * 4 * d * d                           // q, k, v and out projections
                           + 2 * t * d * static_cast<double>(mlp)  // the two MLP linears
                           + 2 * t * t * d;                        // q·kᵀ and weights·v
  const double macs =
      patches * patch_in * d + static_cast<double>(layers) * per_layer + d * static_cast<double>(classes);
  return 2 * macs;
}

double VisionTransformerImpl::forward_flops() const {
  return config.forward_flops();
}

}  // namespace xpuperf::models
