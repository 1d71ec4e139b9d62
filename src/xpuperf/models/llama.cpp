#include "xpuperf/models/llama.h"

#include <tuple>

#include "xpuperf/models/fused_ops.h"
#include "xpuperf/torchrt/compat.h"

namespace xpuperf::models {

namespace nn = torch::nn;

namespace {
constexpr double kInitStd = 0.02;  // Hugging Face's initializer_range

template <typename Layer = nn::Linear>
Layer linear(std::int64_t in, std::int64_t out) {
  Layer l(nn::LinearOptions(in, out).bias(false));
  nn::init::normal_(l->weight, 0.0, kInitStd);
  return l;
}

// `parts` (out_i, in) stacked into one (Σ out_i, in) matrix; each part's weight becomes its view.
torch::Tensor stack_weights(const std::vector<torch::Tensor*>& parts) {
  const torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> values;
  for (auto* p : parts) values.push_back(*p);
  const auto stacked = torch::cat(values, 0);
  std::int64_t at = 0;
  for (auto* p : parts) {
    const auto rows = p->size(0);
    p->set_data(stacked.narrow(0, at, rows));
    at += rows;
  }
  return stacked;
}

// Still the matrix the weights are views of (a move to another device or type makes copies).
bool still_stacked(const torch::Tensor& stacked, const torch::Tensor& first) {
  return stacked.defined() && stacked.data_ptr() == first.data_ptr() && stacked.dtype() == first.dtype();
}
}  // namespace

std::int64_t LlamaConfig::parameter_count() const {
  const std::int64_t kv = kv_heads * head_dim();
  const std::int64_t layer = hidden * hidden * 2 + 2 * hidden * kv + 3 * hidden * intermediate + 2 * hidden;
  return layers * layer + hidden + 2 * vocab * hidden;
}

double LlamaConfig::forward_flops(std::int64_t tokens, std::int64_t logit_positions) const {
  const auto h = static_cast<double>(hidden), kv = static_cast<double>(kv_heads * head_dim());
  const double linears = 2 * h * h + 2 * h * kv + 3 * h * static_cast<double>(intermediate);
  const double t = static_cast<double>(tokens);
  // q kᵀ and the weighted sum of v: 2 × tokens² × hidden multiply-adds a layer, half of them causal.
  const double attention = 2 * t * t * h / 2;
  return 2 * (static_cast<double>(layers) * (t * linears + attention) +
              static_cast<double>(logit_positions) * h * static_cast<double>(vocab));
}

LlamaRMSNormImpl::LlamaRMSNormImpl(std::int64_t width, double epsilon) : eps(epsilon) {
  weight = register_parameter("weight", torch::ones({width}));
}

torch::Tensor LlamaRMSNormImpl::forward(const torch::Tensor& x) {
  return compat::rms_norm(x, weight, eps);
}

std::pair<torch::Tensor, torch::Tensor> LlamaRMSNormImpl::add_forward(const torch::Tensor& x,
                                                                      const torch::Tensor& delta, bool kernels) {
  return fused::add_rms_norm(x, delta, weight, eps, kernels);
}

LlamaAttentionImpl::LlamaAttentionImpl(const LlamaConfig& c)
    : heads(c.heads), kv_heads(c.kv_heads), head_dim(c.head_dim()) {
  TORCH_CHECK(c.hidden % c.heads == 0, "Llama: hidden size ", c.hidden, " is not a multiple of the ", c.heads,
              " heads");
  TORCH_CHECK(c.heads % c.kv_heads == 0, "Llama: ", c.heads, " attention heads are not a multiple of the ", c.kv_heads,
              " key/value heads");
  using parallel::ColumnParallelLinear;
  q_proj = register_module("q_proj", linear<ColumnParallelLinear>(c.hidden, c.heads * head_dim));
  k_proj = register_module("k_proj", linear<ColumnParallelLinear>(c.hidden, c.kv_heads * head_dim));
  v_proj = register_module("v_proj", linear<ColumnParallelLinear>(c.hidden, c.kv_heads * head_dim));
  o_proj = register_module("o_proj", linear<parallel::RowParallelLinear>(c.heads * head_dim, c.hidden));
}

void LlamaAttentionImpl::split(std::shared_ptr<parallel::TensorParallel> group) {
  const std::int64_t parts = group->size();
  parallel::require_divides(*group, kv_heads, "Llama's", "key/value heads (num_key_value_heads)");
  for (auto* layer : {&q_proj, &k_proj, &v_proj}) (*layer)->split(group);
  o_proj->split(group);
  heads /= parts;
  kv_heads /= parts;
}

torch::Tensor LlamaForward::rotate(const torch::Tensor& x) const {
  return fused::rotary(x, cos, sin_signed);
}

void LlamaAttentionImpl::fuse_projections() {
  if (still_stacked(qkv_weight, q_proj->weight)) return;
  qkv_weight = stack_weights({&q_proj->weight, &k_proj->weight, &v_proj->weight});
}

torch::Tensor LlamaAttentionImpl::forward(const torch::Tensor& x, const LlamaForward& f, std::int64_t layer) {
  TORCH_CHECK(!f.step || !o_proj->is_split(),
              "Llama: generation with a KV cache runs the whole model, not a "
              "tensor-parallel part");
  const auto b = x.size(0), t = x.size(1);
  fused::RotatedQkv r;
  if (still_stacked(qkv_weight, q_proj->weight)) {
    const auto qkv = fused::linear(x, qkv_weight, f.kernels).view({b, t, heads + 2 * kv_heads, head_dim});
    r = fused::rotary_qkv(qkv, heads, kv_heads, f.cos, f.sin_signed, f.step, layer, f.kernels);
  } else {
    r.q = f.rotate(q_proj(x).view({b, t, heads, head_dim}));
    r.k = f.rotate(k_proj(x).view({b, t, kv_heads, head_dim}));
    r.v = v_proj(x).view({b, t, kv_heads, head_dim});
  }
  const auto transposed = [](const torch::Tensor& a) { return a.defined() ? a.transpose(1, 2) : a; };
  const auto y = decoder_attention(r.q.transpose(1, 2), transposed(r.k), transposed(r.v), layer, f.step, r.cached)
                     .transpose(1, 2)
                     .reshape({b, t, heads * head_dim});
  return o_proj->is_split() ? o_proj(y) : fused::linear(y, o_proj->weight, f.kernels);
}

LlamaMLPImpl::LlamaMLPImpl(const LlamaConfig& c) {
  gate_proj = register_module("gate_proj", linear<parallel::ColumnParallelLinear>(c.hidden, c.intermediate));
  up_proj = register_module("up_proj", linear<parallel::ColumnParallelLinear>(c.hidden, c.intermediate));
  down_proj = register_module("down_proj", linear<parallel::RowParallelLinear>(c.intermediate, c.hidden));
}

void LlamaMLPImpl::split(std::shared_ptr<parallel::TensorParallel> group) {
  const std::int64_t units = gate_proj->weight.size(0);
  parallel::require_divides(*group, units, "Llama's", "MLP units (intermediate_size)");
  gate_proj->split(group);
  up_proj->split(group);
  down_proj->split(group);
}

void LlamaMLPImpl::fuse_projections() {
  if (still_stacked(gate_up_weight, gate_proj->weight)) return;
  gate_up_weight = stack_weights({&gate_proj->weight, &up_proj->weight});
}

torch::Tensor LlamaMLPImpl::forward(const torch::Tensor& x, bool kernels) {
  if (still_stacked(gate_up_weight, gate_proj->weight)) {
    const auto units = fused::silu_mul(fused::linear(x, gate_up_weight, kernels), kernels);
    return down_proj->is_split() ? down_proj(units) : fused::linear(units, down_proj->weight, kernels);
  }
  return down_proj(torch::silu(gate_proj(x)) * up_proj(x));
}

LlamaDecoderLayerImpl::LlamaDecoderLayerImpl(const LlamaConfig& c) {
  self_attn = register_module("self_attn", LlamaAttention(c));
  mlp = register_module("mlp", LlamaMLP(c));
  input_layernorm = register_module("input_layernorm", LlamaRMSNorm(c.hidden, c.rms_norm_eps));
  post_attention_layernorm = register_module("post_attention_layernorm", LlamaRMSNorm(c.hidden, c.rms_norm_eps));
}

std::pair<torch::Tensor, torch::Tensor> LlamaDecoderLayerImpl::forward(const torch::Tensor& residual,
                                                                       const torch::Tensor& delta,
                                                                       const LlamaForward& f, std::int64_t layer) {
  const auto [input, normed] = input_layernorm->add_forward(residual, delta, f.kernels);
  const auto [x, normed_x] = post_attention_layernorm->add_forward(input, self_attn(normed, f, layer), f.kernels);
  return {x, mlp->forward(normed_x, f.kernels)};
}

LlamaModelImpl::LlamaModelImpl(const LlamaConfig& c) : config(c) {
  embed_tokens = register_module("embed_tokens", parallel::VocabParallelEmbedding(c.vocab, c.hidden));
  nn::init::normal_(embed_tokens->weight, 0.0, kInitStd);
  layers = register_module("layers", nn::ModuleList());
  for (std::int64_t i = 0; i < c.layers; ++i) layers->push_back(LlamaDecoderLayer(c));
  norm = register_module("norm", LlamaRMSNorm(c.hidden, c.rms_norm_eps));
}

torch::Tensor LlamaModelImpl::forward(const torch::Tensor& ids, const KvStep* step, bool kernels) {
  torch::Tensor x = embed_tokens(ids), delta;
  // Rotary positions as Hugging Face computes them: angles in float32, cos and sin in x's type.
  const auto positions = step ? step->positions : torch::arange(ids.size(1), ids.options()).unsqueeze(0);
  const auto dim = config.head_dim();
  const auto inv_freq = 1.0 / torch::pow(config.rope_theta,
                                         torch::arange(0, dim, 2, ids.options().dtype(torch::kLong)).to(torch::kFloat) /
                                             static_cast<double>(dim));
  const auto angles = positions.to(torch::kFloat).unsqueeze(-1) * inv_freq;
  const auto emb = torch::cat({angles, angles}, -1).unsqueeze(2);  // (batch or 1, tokens, 1, head_dim)
  const auto sign = torch::cat({-torch::ones({dim / 2}, emb.options()), torch::ones({dim / 2}, emb.options())});
  const LlamaForward f{emb.cos().to(x.scalar_type()), (emb.sin() * sign).to(x.scalar_type()), step, kernels};
  std::int64_t i = 0;
  for (const auto& layer : *layers) std::tie(x, delta) = layer->as<LlamaDecoderLayer>()->forward(x, delta, f, i++);
  return norm->add_forward(x, delta, kernels).second;
}

LlamaForCausalLMImpl::LlamaForCausalLMImpl(const LlamaConfig& c) : config(c) {
  model = register_module("model", LlamaModel(c));
  lm_head = register_module("lm_head", linear(c.hidden, c.vocab));
}

void LlamaForCausalLMImpl::split_for_tensor_parallel(std::shared_ptr<parallel::TensorParallel> tp) {
  parallel::require_divides(*tp, config.vocab, "Llama's", "vocabulary rows (vocab_size)");
  model->embed_tokens->split(tp);
  for (const auto& layer : *model->layers) {
    auto* l = layer->as<LlamaDecoderLayer>();
    l->self_attn->split(tp);
    l->mlp->split(tp);
  }
}

void LlamaForCausalLMImpl::fuse_for_inference() {
  for (const auto& layer : *model->layers) {
    auto* l = layer->as<LlamaDecoderLayer>();
    l->self_attn->fuse_projections();
    l->mlp->fuse_projections();
  }
}

torch::Tensor LlamaForCausalLMImpl::forward(const torch::Tensor& ids) {
  return decoder_logits(ids, nullptr, 0);
}

torch::Tensor LlamaForCausalLMImpl::decoder_logits(const torch::Tensor& ids, const KvStep* step,
                                                   std::int64_t keep_last) {
  auto hidden = model->forward(ids, step, fused_kernels);
  if (keep_last > 0 && keep_last < hidden.size(1)) hidden = hidden.narrow(1, hidden.size(1) - keep_last, keep_last);
  return fused::linear(hidden, lm_head->weight, fused_kernels);
}

}  // namespace xpuperf::models
