#include "xpuperf/models/llama.h"

#include <cmath>
#include <optional>
#include <tuple>

#include "xpuperf/models/fused_ops.h"
#include "xpuperf/models/stacked_weights.h"
#include "xpuperf/models/vocabulary_output.h"
#include "xpuperf/torchrt/compat.h"
#include "xpuperf/torchrt/init.h"

namespace xpuperf::models {

namespace nn = torch::nn;

namespace {
constexpr double kLlamaInitStd = 0.02;  // Hugging Face's initializer_range

template <typename Layer = nn::Linear>
Layer linear(std::int64_t in, std::int64_t out) {
  return torchrt::normal_linear<Layer>(in, out, /*bias=*/false, kLlamaInitStd);
}

}  // namespace

LlamaConfig LlamaConfig::llama3_2_1b() {
  LlamaConfig c{128256, 2048, 8192, 16, 32, 8, 131072, 1e-5, 500000.0};
  c.tie_word_embeddings = true;
  c.rope_factor = 32;
  return c;
}

LlamaConfig LlamaConfig::llama3_2_3b() {
  LlamaConfig c{128256, 3072, 8192, 28, 24, 8, 131072, 1e-5, 500000.0};
  c.tie_word_embeddings = true;
  c.rope_factor = 32;
  return c;
}

LlamaConfig LlamaConfig::llama3_8b() {
  return {128256, 4096, 14336, 32, 32, 8, 8192, 1e-5, 500000.0};
}

LlamaConfig LlamaConfig::mixtral_8x7b() {
  LlamaConfig c{32000, 4096, 14336, 32, 32, 8, 32768, 1e-5, 1e6};
  c.moe.experts = 8;
  c.moe.top_k = 2;
  return c;
}

std::string LlamaConfig::problem() const {
  if (moe.expert_intermediate < 0 || moe.shared_intermediate < 0)
    return "moe_intermediate_size " + std::to_string(moe.expert_intermediate) + ", shared_expert_intermediate_size " +
           std::to_string(moe.shared_intermediate) +
           ": 0 (the experts as wide as intermediate_size; no shared expert) or more";
  if (moe.experts != 0 &&
      (moe.experts < 2 || moe.top_k < 1 || moe.top_k > moe.experts || moe.every < 1 || moe.capacity_factor < 0))
    return "num_local_experts " + std::to_string(moe.experts) + ", num_experts_per_tok " + std::to_string(moe.top_k) +
           ", decoder_sparse_step " + std::to_string(moe.every) +
           ": 0 experts (dense) or 2 or more with 1 to that many a token, a sparse step of 1 or more and a "
           "capacity factor of 0 (none) or more";
  if (vocab < 2 || hidden < 1 || intermediate < 1 || layers < 1 || heads < 1 || kv_heads < 1 || max_positions < 1 ||
      hidden % heads != 0 || heads % kv_heads != 0 || head_dim() % 2 != 0)
    return "vocab_size " + std::to_string(vocab) + ", hidden_size " + std::to_string(hidden) + ", intermediate_size " +
           std::to_string(intermediate) + ", num_hidden_layers " + std::to_string(layers) + ", num_attention_heads " +
           std::to_string(heads) + ", num_key_value_heads " + std::to_string(kv_heads) + ", max_position_embeddings " +
           std::to_string(max_positions) +
           ": each must be positive (vocab_size at least 2), hidden_size a multiple of num_attention_heads with "
           "an even head width, num_attention_heads a multiple of num_key_value_heads";
  if (!(rms_norm_eps > 0) || !(rope_theta > 0))
    return "rms_norm_eps and rope_theta must be positive (got " + std::to_string(rms_norm_eps) + ", " +
           std::to_string(rope_theta) + ")";
  if (rope_factor < 0 ||
      (rope_factor > 0 &&
       (rope_low_freq_factor <= 0 || rope_high_freq_factor <= rope_low_freq_factor || rope_original_max_positions < 1)))
    return "rope_scaling_factor " + std::to_string(rope_factor) +
           ": 0 (no scaling) or, for Llama 3.1's scaling, positive with rope_high_freq_factor > "
           "rope_low_freq_factor > 0 and rope_original_max_position_embeddings >= 1";
  return "";
}

LlamaConfig llama_config_from(const Config& cfg, LlamaConfig c) {
  c.vocab = cfg.get_int("vocab_size", c.vocab);
  c.hidden = cfg.get_int("hidden_size", c.hidden);
  c.intermediate = cfg.get_int("intermediate_size", c.intermediate);
  c.layers = cfg.get_int("num_hidden_layers", c.layers);
  c.heads = cfg.get_int("num_attention_heads", c.heads);
  c.kv_heads = cfg.get_int("num_key_value_heads", c.kv_heads);
  c.max_positions = cfg.get_int("max_position_embeddings", c.max_positions);
  c.rms_norm_eps = cfg.get_number("rms_norm_eps", c.rms_norm_eps);
  c.rope_theta = cfg.get_number("rope_theta", c.rope_theta);
  c.tie_word_embeddings = cfg.get_bool("tie_word_embeddings", c.tie_word_embeddings);
  c.rope_factor = cfg.get_number("rope_scaling_factor", c.rope_factor);
  c.rope_low_freq_factor = cfg.get_number("rope_low_freq_factor", c.rope_low_freq_factor);
  c.rope_high_freq_factor = cfg.get_number("rope_high_freq_factor", c.rope_high_freq_factor);
  c.rope_original_max_positions = cfg.get_int("rope_original_max_position_embeddings", c.rope_original_max_positions);
  c.moe.experts = cfg.get_int("num_local_experts", c.moe.experts);
  c.moe.top_k = cfg.get_int("num_experts_per_tok", c.moe.top_k);
  c.moe.every = cfg.get_int("decoder_sparse_step", c.moe.every);
  c.moe.capacity_factor = cfg.get_number("moe_capacity_factor", c.moe.capacity_factor);
  c.moe.aux_loss_coef = cfg.get_number("router_aux_loss_coef", c.moe.aux_loss_coef);
  c.moe.z_loss_coef = cfg.get_number("router_z_loss_coef", c.moe.z_loss_coef);
  c.moe.expert_intermediate = cfg.get_int("moe_intermediate_size", c.moe.expert_intermediate);
  c.moe.shared_intermediate = cfg.get_int("shared_expert_intermediate_size", c.moe.shared_intermediate);
  c.moe.normalize_top_k = cfg.get_bool("norm_topk_prob", c.moe.normalize_top_k);
  if (const auto problem = c.problem(); !problem.empty())
    throw ConfigError("the Llama's settings do not fit: " + problem);
  return c;
}

std::int64_t LlamaConfig::parameter_count() const {
  const std::int64_t kv = kv_heads * head_dim();
  const std::int64_t dense = hidden * hidden * 2 + 2 * hidden * kv + 3 * hidden * intermediate + 2 * hidden;
  std::int64_t total = hidden + (tie_word_embeddings ? 1 : 2) * vocab * hidden;
  const std::int64_t sparse = dense - 3 * hidden * intermediate + moe.experts * 3 * hidden * expert_units() +
                              hidden * moe.experts +
                              (moe.shared_intermediate > 0 ? 3 * hidden * moe.shared_intermediate + hidden : 0);
  for (std::int64_t i = 0; i < layers; ++i) total += sparse_layer(i) ? sparse : dense;
  return total;
}

double LlamaConfig::training_flops_per_token(std::int64_t tokens) const {
  return 3 * forward_flops(tokens, tokens) / static_cast<double>(tokens);
}

torch::Tensor LlamaConfig::inverse_frequencies(const torch::TensorOptions& options) const {
  const auto dim = head_dim();
  const auto f = options.dtype(torch::kFloat);
  auto inv = 1.0 / torch::pow(rope_theta,
                              torch::arange(0, dim, 2, options.dtype(torch::kLong)).to(f) / static_cast<double>(dim));
  if (rope_factor <= 0) return inv;
  // Hugging Face's _compute_llama3_parameters, operation for operation.
  const double old = static_cast<double>(rope_original_max_positions);
  const double low_wavelength = old / rope_low_freq_factor, high_wavelength = old / rope_high_freq_factor;
  const auto wavelength = 2 * M_PI / inv;
  const auto scaled = torch::where(wavelength > low_wavelength, inv / rope_factor, inv);
  const auto smooth = (old / wavelength - rope_low_freq_factor) / (rope_high_freq_factor - rope_low_freq_factor);
  const auto smoothed = (1 - smooth) * scaled / rope_factor + smooth * scaled;
  const auto medium = (wavelength >= high_wavelength).logical_and(wavelength <= low_wavelength);
  return torch::where(medium, smoothed, scaled);
}

double LlamaConfig::forward_flops(std::int64_t tokens, std::int64_t logit_positions) const {
  const auto h = static_cast<double>(hidden), kv = static_cast<double>(kv_heads * head_dim());
  const double attention_linears = 2 * h * h + 2 * h * kv, mlp = 3 * h * static_cast<double>(intermediate);
  const double t = static_cast<double>(tokens);
  // q kᵀ and the weighted sum of v: 2 × tokens² × hidden multiply-adds a layer, half of them causal.
  const double attention = 2 * t * t * h / 2;
  double total = static_cast<double>(logit_positions) * h * static_cast<double>(vocab);
  for (std::int64_t i = 0; i < layers; ++i) {
    // A sparse layer counts the experts a token uses (top_k of them) and the router, not all of them.
    const double expert = 3 * h * static_cast<double>(expert_units());
    const double shared = moe.shared_intermediate > 0 ? 3 * h * static_cast<double>(moe.shared_intermediate) + h : 0.0;
    const double mlp_used =
        sparse_layer(i) ? static_cast<double>(moe.top_k) * expert + h * static_cast<double>(moe.experts) + shared : mlp;
    total += t * (attention_linears + mlp_used) + attention;
  }
  return 2 * total;
}

LlamaRMSNormImpl::LlamaRMSNormImpl(std::int64_t width, double epsilon) : eps(epsilon) {
  weight = register_parameter("weight", torch::ones({width}));
}

torch::Tensor LlamaRMSNormImpl::used_weight() const {
  return parallel::whole_parameter(sequence_group.get(), weight);
}

torch::Tensor LlamaRMSNormImpl::forward(const torch::Tensor& x) {
  return compat::rms_norm(x, used_weight(), eps);
}

std::pair<torch::Tensor, torch::Tensor> LlamaRMSNormImpl::add_forward(const torch::Tensor& x,
                                                                      const torch::Tensor& delta, bool kernels,
                                                                      bool to_products) {
  return fused::add_rms_norm(x, delta, used_weight(), eps, kernels,
                             to_products ? fused::autocast_product_type(x) : std::nullopt);
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

namespace {
// Whether column-parallel layers reading one input can run as one product: no adapter, one group.
// x entering the layers' group once (its gradient summed over the group backward); x itself when whole:
// for two products of one input (one product of joined weights: parallel::column_parallel_linear).
torch::Tensor entering(const parallel::ColumnParallelLinear& layer, const torch::Tensor& x) {
  return layer->group() ? layer->group()->copy_in(x) : x;
}
}  // namespace

bool LlamaAttentionImpl::joins_projections(const LlamaForward& f) const {
  return f.kernels && !f.step && !still_stacked(qkv_weight, q_proj->weight) &&
         parallel::joinable({&q_proj, &k_proj, &v_proj});
}

torch::Tensor LlamaAttentionImpl::forward(const torch::Tensor& x, const LlamaForward& f, std::int64_t layer) {
  TORCH_CHECK(!f.step || !o_proj->is_split(),
              "Llama: generation with a KV cache runs the whole model, not a "
              "tensor-parallel part");
  // The products' tokens: all of them, where sequence parallelism gives x a rank's share only.
  const auto b = x.size(0);
  fused::RotatedQkv r;
  if (still_stacked(qkv_weight, q_proj->weight)) {
    r = fused::linear_rotary_qkv(x, qkv_weight, heads, kv_heads, head_dim, f.cos, f.sin_signed, f.step, layer,
                                 f.kernels);
  } else if (joins_projections(f)) {
    const auto weight = torch::cat({q_proj->weight, k_proj->weight, v_proj->weight});
    const auto qkv = parallel::column_parallel_linear(q_proj->group(), x, weight, torch::Tensor())
                         .view({b, -1, heads + 2 * kv_heads, head_dim});
    r = fused::rotary_qkv(qkv, heads, kv_heads, f.cos, f.sin_signed, nullptr, layer, f.kernels);
  } else {
    r.q = f.rotate(q_proj(x).view({b, -1, heads, head_dim}));
    r.k = f.rotate(k_proj(x).view({b, -1, kv_heads, head_dim}));
    r.v = v_proj(x).view({b, -1, kv_heads, head_dim});
  }
  const auto transposed = [](const torch::Tensor& a) { return a.defined() ? a.transpose(1, 2) : a; };
  const auto y = decoder_attention(r.q.transpose(1, 2), transposed(r.k), transposed(r.v), layer, f.step, r.cached,
                                   f.mask, f.kernels)
                     .transpose(1, 2)
                     .reshape({b, -1, heads * head_dim});
  return o_proj->is_split() || o_proj->has_adapter() ? o_proj(y) : fused::linear(y, o_proj->weight, f.kernels);
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

bool LlamaMLPImpl::joins_projections(bool kernels) const {
  return kernels && !still_stacked(gate_up_weight, gate_proj->weight) && parallel::joinable({&gate_proj, &up_proj});
}

torch::Tensor LlamaMLPImpl::forward(const torch::Tensor& x, bool kernels) {
  if (still_stacked(gate_up_weight, gate_proj->weight)) {
    const auto units = fused::linear_silu_mul(x, gate_up_weight, kernels);
    return down_proj->is_split() || down_proj->has_adapter() ? down_proj(units)
                                                             : fused::linear(units, down_proj->weight, kernels);
  }
  if (joins_projections(kernels)) {
    const auto in = entering(gate_proj, x);
    return down_proj(fused::silu_mul(torch::nn::functional::linear(in, gate_proj->weight),
                                     torch::nn::functional::linear(in, up_proj->weight), kernels));
  }
  return down_proj(fused::silu_mul(gate_proj(x), up_proj(x), kernels));
}

LlamaDecoderLayerImpl::LlamaDecoderLayerImpl(const LlamaConfig& c, std::int64_t index) {
  self_attn = register_module("self_attn", LlamaAttention(c));
  if (c.sparse_layer(index))
    moe = register_module("block_sparse_moe", SparseMoeBlock(c.hidden, c.intermediate, c.moe));
  else
    mlp = register_module("mlp", LlamaMLP(c));
  input_layernorm = register_module("input_layernorm", LlamaRMSNorm(c.hidden, c.rms_norm_eps));
  post_attention_layernorm = register_module("post_attention_layernorm", LlamaRMSNorm(c.hidden, c.rms_norm_eps));
}

std::pair<torch::Tensor, torch::Tensor> LlamaDecoderLayerImpl::forward(const torch::Tensor& residual,
                                                                       const torch::Tensor& delta,
                                                                       const LlamaForward& f, std::int64_t layer) {
  // Under autocast the norms write the products' type where only whole products read them: q/k/v as
  // one product; gate and up (whose two input gradients autograd then adds in that type); the experts,
  // whose block gathers its tokens into the products' buffers (half the bytes, and half for expert
  // parallelism's all-to-all) and rounds the router's input as its product would.
  const auto [input, normed] =
      input_layernorm->add_forward(residual, delta, f.kernels, self_attn->joins_projections(f));
  const bool to_mlp = f.kernels && (moe || mlp->joins_projections(f.kernels));
  const auto [x, normed_x] =
      post_attention_layernorm->add_forward(input, self_attn(normed, f, layer), f.kernels, to_mlp);
  return {x, moe ? moe->forward(normed_x, f.kernels) : mlp->forward(normed_x, f.kernels)};
}

LlamaModelImpl::LlamaModelImpl(const LlamaConfig& c) : config(c) {
  embed_tokens = register_module(
      "embed_tokens", torchrt::normal_embedding<parallel::VocabParallelEmbedding>(c.vocab, c.hidden, kLlamaInitStd));
  layers = register_module("layers", nn::ModuleList());
  for (std::int64_t i = 0; i < c.layers; ++i) layers->push_back(LlamaDecoderLayer(c, i));
  norm = register_module("norm", LlamaRMSNorm(c.hidden, c.rms_norm_eps));
}

torch::Tensor LlamaModelImpl::forward(const torch::Tensor& ids, const KvStep* step, bool kernels,
                                      const DocumentAttention* documents) {
  const auto whole = [this](const torch::Tensor& h) {
    return sequence_group ? sequence_group->gather_for_whole(h) : h;
  };
  torch::Tensor x = embed_tokens(ids), delta;
  // Rotary positions as Hugging Face computes them: angles in float32, cos and sin in x's type.
  const auto positions = step        ? step->positions
                         : documents ? documents->positions
                                     : torch::arange(ids.size(1), ids.options()).unsqueeze(0);
  const auto dim = config.head_dim();
  const auto inv_freq = config.inverse_frequencies(ids.options());
  const auto angles = positions.to(torch::kFloat).unsqueeze(-1) * inv_freq;
  const auto emb = torch::cat({angles, angles}, -1).unsqueeze(2);  // (batch or 1, tokens, 1, head_dim)
  const auto sign = torch::cat({-torch::ones({dim / 2}, emb.options()), torch::ones({dim / 2}, emb.options())});
  const LlamaForward f{emb.cos().to(x.scalar_type()), (emb.sin() * sign).to(x.scalar_type()), step, kernels,
                       documents ? documents->mask : torch::Tensor()};
  std::int64_t i = 0;
  if (!step && wraps_blocks()) {
    for (const auto& layer : *layers) {
      auto* l = layer->as<LlamaDecoderLayer>();
      const std::int64_t index = i++;
      // The rotary tables are captured by value: a checkpointed layer runs again in backward.
      x = run_block(
          *l,
          [l, f, index](const torch::Tensor& in) {
            const auto [residual, mlp_out] = l->forward(in, torch::Tensor(), f, index);
            return residual + mlp_out;
          },
          x);
    }
    return whole(norm->forward(x));
  }
  for (const auto& layer : *layers) std::tie(x, delta) = layer->as<LlamaDecoderLayer>()->forward(x, delta, f, i++);
  return whole(norm->add_forward(x, delta, kernels, kernels).second);  // read by the output layer's product alone
}

std::vector<torch::nn::Module*> LlamaModelImpl::blocks() {
  std::vector<torch::nn::Module*> out;
  for (const auto& layer : *layers) out.push_back(layer.get());
  return out;
}

LlamaForCausalLMImpl::LlamaForCausalLMImpl(const LlamaConfig& c) : config(c) {
  model = register_module("model", LlamaModel(c));
  if (!c.tie_word_embeddings) lm_head = register_module("lm_head", linear(c.hidden, c.vocab));
}

const torch::Tensor& LlamaForCausalLMImpl::output_weight() const {
  return config.tie_word_embeddings ? model->embed_tokens->weight : lm_head->weight;
}

std::map<std::string, std::string> LlamaForCausalLMImpl::tied_weights() const {
  if (!config.tie_word_embeddings) return {};
  return {{"lm_head.weight", "model.embed_tokens.weight"}};
}

void LlamaForCausalLMImpl::split_for_tensor_parallel(std::shared_ptr<parallel::TensorParallel> tp) {
  TORCH_CHECK(!config.tie_word_embeddings,
              "Llama: tensor parallelism splits the embedding's vocabulary rows, and a tied output layer "
              "(tie_word_embeddings) would then see part of the vocabulary: untie it or use tensor_parallel 1");
  parallel::require_divides(*tp, config.vocab, "Llama's", "vocabulary rows (vocab_size)");
  model->embed_tokens->split(tp);
  if (tp->sequence_parallel()) {
    model->sequence_group = tp;
    model->norm->sequence_group = tp;
  }
  for (const auto& layer : *model->layers) {
    auto* l = layer->as<LlamaDecoderLayer>();
    if (tp->sequence_parallel()) l->input_layernorm->sequence_group = l->post_attention_layernorm->sequence_group = tp;
    l->self_attn->split(tp);
    TORCH_CHECK(l->mlp,
                "Llama: tensor parallelism of the experts' layers is not built (expert parallelism is the way)");
    l->mlp->split(tp);
  }
}

std::vector<torch::Tensor> LlamaForCausalLMImpl::split_for_expert_parallel(
    std::shared_ptr<parallel::ExpertParallel> ep) {
  std::vector<torch::Tensor> experts;
  for (const auto& layer : *model->layers)
    if (auto moe = layer->as<LlamaDecoderLayer>()->moe) {
      const auto kept = moe->split_experts(ep);
      experts.insert(experts.end(), kept.begin(), kept.end());
    }
  if (experts.empty())
    throw std::invalid_argument("expert_parallel " + std::to_string(ep->size()) +
                                ": this Llama has no experts (num_local_experts: 0)");
  return experts;
}

void LlamaForCausalLMImpl::fuse_for_inference() {
  for (const auto& layer : *model->layers) {
    auto* l = layer->as<LlamaDecoderLayer>();
    l->self_attn->fuse_projections();
    if (l->mlp) l->mlp->fuse_projections();
  }
}

torch::Tensor LlamaForCausalLMImpl::forward(const torch::Tensor& ids) {
  return decoder_logits(ids, nullptr, 0);
}

torch::Tensor LlamaForCausalLMImpl::decoder_logits(const torch::Tensor& ids, const KvStep* step,
                                                   std::int64_t keep_last) {
  auto hidden = model->forward(ids, step, fused_kernels);
  if (step && step->logit_rows.defined()) hidden = hidden.index_select(1, step->logit_rows);
  if (keep_last > 0 && keep_last < hidden.size(1)) hidden = hidden.narrow(1, hidden.size(1) - keep_last, keep_last);
  return fused::linear(hidden, output_weight(), fused_kernels);
}

torch::Tensor LlamaForCausalLMImpl::loss(const torch::Tensor& ids, const torch::Tensor& documents) {
  const auto inputs = ids.narrow(1, 0, ids.size(1) - 1), targets = ids.narrow(1, 1, ids.size(1) - 1);
  std::optional<DocumentAttention> d;
  if (documents.defined()) d = document_attention(documents.narrow(1, 0, inputs.size(1)));
  const auto hidden = model->forward(inputs, nullptr, fused_kernels, d ? &*d : nullptr);
  const auto logits = torch::nn::functional::linear(hidden, output_weight());
  auto loss = token_cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}), fused_kernels);
  if (config.moe.experts == 0 || !is_training()) return loss;
  for (const auto& layer : *model->layers)
    if (auto& moe = layer->as<LlamaDecoderLayer>()->moe) {
      loss = loss + config.moe.aux_loss_coef * moe->load_balancing_loss + config.moe.z_loss_coef * moe->z_loss;
      // Taken: kept, they would hold this step's autograd graph alive into the next one (its
      // AccumulateGrad nodes then meet a CUDA graph's capture on another stream, which fails).
      moe->load_balancing_loss = moe->z_loss = torch::Tensor();
    }
  return loss;
}

std::pair<std::int64_t, std::int64_t> LlamaForCausalLMImpl::dropped_tokens() const {
  std::int64_t dropped = 0, routed = 0;
  for (const auto& layer : *model->layers)
    if (const auto& moe = layer->as<LlamaDecoderLayer>()->moe) {
      dropped += moe->dropped;
      routed += moe->routed;
    }
  return {dropped, routed};
}

}  // namespace xpuperf::models
