#include "xpuperf/models/gpt.h"

#include <cmath>
#include <tuple>
#include <vector>

#include "xpuperf/models/documents.h"
#include "xpuperf/models/fused_ops.h"
#include "xpuperf/models/vocabulary_output.h"
#include "xpuperf/torchrt/compat.h"
#include "xpuperf/torchrt/init.h"

namespace xpuperf::models {

namespace nn = torch::nn;

namespace {
constexpr double kGptInitStd = 0.02;  // GPT-2's initialiser range
}

GptAttentionImpl::GptAttentionImpl(const GptConfig& c) : heads(c.heads), dropout(c.dropout) {
  TORCH_CHECK(c.hidden % c.heads == 0, "GPT: hidden size ", c.hidden, " is not a multiple of the ", c.heads, " heads");
  c_attn =
      register_module("c_attn", parallel::Conv1D(c.hidden, 3 * c.hidden, kGptInitStd, parallel::Conv1DSplit::Columns));
  // GPT-2 scales the residual projections by the depth.
  c_proj = register_module(
      "c_proj", parallel::Conv1D(c.hidden, c.hidden, kGptInitStd / std::sqrt(2.0 * static_cast<double>(c.layers)),
                                 parallel::Conv1DSplit::Rows));
  resid_dropout = register_module("resid_dropout", nn::Dropout(c.dropout));
}

void GptAttentionImpl::split(std::shared_ptr<parallel::TensorParallel> group) {
  const std::int64_t parts = group->size();
  parallel::require_divides(*group, heads, "the", "attention heads");
  c_attn->split(group, 3);  // this rank's heads of q, k and v
  c_proj->split(group);
  heads /= parts;
}

torch::Tensor GptAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& mask, bool resid_dropout_on) {
  // The products' tokens (-1): all of them, where sequence parallelism gives x a rank's share only.
  const auto b = x.size(0), width = c_proj->in_features(), hd = width / heads;
  // Split, as Hugging Face's GPT-2 does: its backward is one concatenation of the three gradients,
  // where indexing a stacked view makes three zero-filled copies of the projection and adds them.
  const auto qkv = c_attn(x).split(width, -1);
  const auto heads_of = [&](const torch::Tensor& part) { return part.view({b, -1, heads, hd}).transpose(1, 2); };
  const auto y = compat::attention(heads_of(qkv[0]), heads_of(qkv[1]), heads_of(qkv[2]), dropout, is_training(),
                                   /*causal=*/!mask.defined(), mask)
                     .transpose(1, 2)
                     .reshape({b, -1, width});
  return resid_dropout_on ? resid_dropout(c_proj(y)) : c_proj(y);
}

torch::Tensor GptAttentionImpl::forward_cached(const torch::Tensor& x, std::int64_t layer, const KvStep* step) {
  TORCH_CHECK(!c_proj->is_split(), "GPT: generation with a KV cache runs the whole model, not a tensor-parallel part");
  const auto b = x.size(0), t = x.size(1), d = x.size(2), hd = d / heads;
  const auto qkv = c_attn(x).view({b, t, 3, heads, hd}).permute({2, 0, 3, 1, 4});
  return c_proj(decoder_attention(qkv[0], qkv[1], qkv[2], layer, step).transpose(1, 2).reshape({b, t, d}));
}

GptMlpImpl::GptMlpImpl(const GptConfig& c) {
  c_fc = register_module("c_fc", parallel::Conv1D(c.hidden, 4 * c.hidden, kGptInitStd, parallel::Conv1DSplit::Columns));
  c_proj = register_module(
      "c_proj", parallel::Conv1D(4 * c.hidden, c.hidden, kGptInitStd / std::sqrt(2.0 * static_cast<double>(c.layers)),
                                 parallel::Conv1DSplit::Rows));
  dropout = register_module("dropout", nn::Dropout(c.dropout));
}

torch::Tensor GptMlpImpl::forward(const torch::Tensor& x, bool drop, bool kernels) {
  torch::Tensor units;
  // Only where the kernel can run: elsewhere the projection with its bias (addmm), whose rounding the
  // recorded curves hold (a separate bias add rounds bf16 once more).
  if (kernels && fused::kernels_run_after(*c_fc, x, "bias_gelu")) {
    auto sizes = x.sizes().vec();
    sizes.back() = c_fc->weight.size(1);
    units = fused::bias_gelu(x.reshape({-1, x.size(-1)}).mm(c_fc->weight).view(sizes), c_fc->bias, true);
  } else {
    units = torch::gelu(c_fc(x), "tanh");  // GPT-2's "gelu_new"
  }
  const auto out = c_proj(units);
  return drop ? dropout(out) : out;
}

void GptMlpImpl::split(std::shared_ptr<parallel::TensorParallel> group) {
  const std::int64_t units = c_fc->weight.size(1);
  parallel::require_divides(*group, units, "the MLP's", "units");
  c_fc->split(group);
  c_proj->split(group);
}

GptBlockImpl::GptBlockImpl(const GptConfig& c) {
  ln_1 = register_module("ln_1", nn::LayerNorm(nn::LayerNormOptions({c.hidden}).eps(c.layer_norm_eps)));
  attn = register_module("attn", GptAttention(c));
  ln_2 = register_module("ln_2", nn::LayerNorm(nn::LayerNormOptions({c.hidden}).eps(c.layer_norm_eps)));
  mlp = register_module("mlp", GptMlp(c));
}

torch::Tensor GptBlockImpl::forward(const torch::Tensor& input, const torch::Tensor& mask) {
  const auto x = input + attn(parallel::layer_norm(ln_1, input, sequence_group.get()), mask);
  return x + mlp(parallel::layer_norm(ln_2, x, sequence_group.get()));
}

std::pair<torch::Tensor, torch::Tensor> GptBlockImpl::forward(const torch::Tensor& residual, const torch::Tensor& delta,
                                                              bool kernels, const torch::Tensor& mask) {
  // delta is the previous block's MLP output before its dropout, which has this MLP's probability.
  const double mlp_p = is_training() ? mlp->dropout->options.p() : 0.0;
  const double attn_p = is_training() ? attn->resid_dropout->options.p() : 0.0;
  // Under autocast the norms write their outputs in the type the products after them take.
  const auto gemm_type = kernels ? fused::autocast_product_type(residual) : std::nullopt;
  const auto used = [this](const torch::Tensor& p) { return parallel::whole_parameter(sequence_group.get(), p); };
  const auto [input, normed] = fused::add_layer_norm(residual, delta, used(ln_1->weight), used(ln_1->bias),
                                                     ln_1->options.eps(), kernels, mlp_p, gemm_type);
  const auto [x, normed_x] = fused::add_layer_norm(input, attn(normed, mask, false), used(ln_2->weight),
                                                   used(ln_2->bias), ln_2->options.eps(), kernels, attn_p, gemm_type);
  return {x, mlp(normed_x, false, kernels)};
}

torch::Tensor GptBlockImpl::forward_cached(const torch::Tensor& input, std::int64_t layer, const KvStep* step) {
  const auto x = input + attn->forward_cached(ln_1(input), layer, step);
  return x + mlp(ln_2(x));
}

GptModelImpl::GptModelImpl(const GptConfig& c) {
  wte = register_module("wte", nn::Embedding(c.vocab, c.hidden));
  wpe = register_module("wpe", nn::Embedding(c.positions, c.hidden));
  torchrt::init_normal(wte->weight, 0.0, kGptInitStd);
  torchrt::init_normal(wpe->weight, 0.0, kGptInitStd);
  if (c.block_positions) {
    wbpe = register_module("wbpe", nn::Embedding(c.positions, c.hidden));
    torchrt::init_normal(wbpe->weight, 0.0, kGptInitStd);
  }
  drop = register_module("drop", nn::Dropout(c.dropout));
  h = register_module("h", nn::ModuleList());
  for (std::int64_t i = 0; i < c.layers; ++i) h->push_back(GptBlock(c));
  ln_f = register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({c.hidden}).eps(c.layer_norm_eps)));
}

torch::Tensor GptModelImpl::forward(const torch::Tensor& ids, bool kernels, const GptExtraInputs* extra) {
  const torch::Tensor mask = extra ? extra->attention_mask : torch::Tensor();
  // With sequence parallelism the blocks take a rank's tokens (a later pipeline stage receives
  // them so), and the output layer all of them.
  parallel::TensorParallel* sequence = sequence_group.get();
  const auto share = [sequence](const torch::Tensor& embedded) {
    return sequence ? sequence->share_of_whole(embedded) : embedded;
  };
  torch::Tensor x;
  if (stage && !stage->first()) {
    x = stage->received();
  } else if (extra && extra->positions.defined()) {
    x = wte(ids) + wpe(extra->positions);
    if (extra->block_positions.defined()) {
      TORCH_CHECK(wbpe, "GPT: block positions given to a model without their table (GptConfig::block_positions)");
      x = x + wbpe(extra->block_positions);
    }
    x = share(drop(x));
  } else {
    TORCH_CHECK(ids.size(1) <= wpe->weight.size(0), "GPT: ", ids.size(1), " tokens, more than its ",
                wpe->weight.size(0), " positions");
    const auto positions = torch::arange(ids.size(1), ids.options());
    x = share(drop(wte(ids) + wpe(positions)));
  }
  const auto whole = [sequence](const torch::Tensor& normed) {
    return sequence ? sequence->gather_for_whole(normed) : normed;
  };
  if (kernels && !stage && !wraps_blocks()) {
    // Each residual add joins the norm after it (the next block's ln_1, or ln_f): one kernel each way.
    torch::Tensor delta;
    for (const auto& block : *h) std::tie(x, delta) = block->as<GptBlock>()->forward(x, delta, kernels, mask);
    const double mlp_p = is_training() ? drop->options.p() : 0.0;  // the config's one probability, as the MLP's
    return whole(fused::add_layer_norm(x, delta, parallel::whole_parameter(sequence, ln_f->weight),
                                       parallel::whole_parameter(sequence, ln_f->bias), ln_f->options.eps(), kernels,
                                       mlp_p)
                     .second);
  }
  for (const auto& block : *h) {
    GptBlockImpl* b = block->as<GptBlock>();
    x = run_block(
        *b, [b, mask](const torch::Tensor& t) { return b->forward(t, mask); }, x);
  }
  if (stage && !stage->last()) return x;
  return whole(parallel::layer_norm(ln_f, x, sequence));
}

std::vector<torch::nn::Module*> GptModelImpl::blocks() {
  std::vector<torch::nn::Module*> list;
  for (const auto& block : *h) list.push_back(block.get());
  return list;
}

GptLMHeadModelImpl::GptLMHeadModelImpl(const GptConfig& c) : config(c) {
  transformer = register_module("transformer", GptModel(c));
}

torch::Tensor GptLMHeadModelImpl::forward(const torch::Tensor& ids) {
  const auto hidden = transformer->forward(ids, fused_kernels);
  if (transformer->stage && !transformer->stage->last()) return transformer->stage->hand_on(hidden);
  return torch::nn::functional::linear(hidden, transformer->wte->weight);  // tied
}

torch::Tensor GptLMHeadModelImpl::loss(const torch::Tensor& ids, const torch::Tensor& documents) {
  const auto inputs = ids.narrow(1, 0, ids.size(1) - 1), targets = ids.narrow(1, 1, ids.size(1) - 1);
  GptExtraInputs extra;
  if (documents.defined()) {
    const auto d = document_attention(documents.narrow(1, 0, inputs.size(1)));
    extra.positions = d.positions, extra.attention_mask = d.mask;
  }
  const auto hidden = transformer->forward(inputs, fused_kernels, documents.defined() ? &extra : nullptr);
  if (transformer->stage && !transformer->stage->last()) return transformer->stage->hand_on(hidden);
  const auto logits = vocabulary_logits(hidden, transformer->wte->weight, {}, hidden.is_cuda());
  return token_cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}), fused_kernels);
}

void GptLMHeadModelImpl::split_for_tensor_parallel(std::shared_ptr<parallel::TensorParallel> tp) {
  if (tp->sequence_parallel()) transformer->sequence_group = tp;
  for (const auto& block : *transformer->h) {
    auto* b = block->as<GptBlock>();
    if (tp->sequence_parallel()) b->sequence_group = tp;
    b->attn->split(tp);
    b->mlp->split(tp);
  }
}

namespace {

// A parameter this pipeline stage does not use: no memory, no gradient, no optimizer state.
void drop_parameter(torch::Tensor& p) {
  torch::NoGradGuard no_grad;
  p.set_data(torch::empty({0}, p.options()));
  p.set_requires_grad(false);
}

}  // namespace

void GptLMHeadModelImpl::split_for_pipeline(std::shared_ptr<parallel::PipelineStage> stage) {
  const auto [begin, end] = stage->block_range(static_cast<std::int64_t>(transformer->h->size()));
  auto kept = nn::ModuleList();
  for (std::int64_t i = begin; i < end; ++i) kept->push_back(transformer->h[static_cast<std::size_t>(i)]);
  transformer->h = transformer->replace_module("h", kept);
  if (!stage->first()) drop_parameter(transformer->wpe->weight);
  if (!stage->first() && !stage->last()) drop_parameter(transformer->wte->weight);
  if (!stage->last()) {
    drop_parameter(transformer->ln_f->weight);
    drop_parameter(transformer->ln_f->bias);
  }
  transformer->stage = std::move(stage);
}

std::vector<torch::Tensor> GptLMHeadModelImpl::tied_across_stages() {
  const auto& stage = transformer->stage;
  if (!stage || stage->count() == 1 || !(stage->first() || stage->last())) return {};
  return {transformer->wte->weight};
}

torch::Tensor GptLMHeadModelImpl::decoder_logits(const torch::Tensor& ids, const KvStep* step, std::int64_t keep_last) {
  TORCH_CHECK(!transformer->stage, "GPT: generation runs the whole model, not a pipeline stage");
  const auto positions = step ? step->positions : torch::arange(ids.size(1), ids.options()).unsqueeze(0);
  auto x = transformer->wte(ids) + transformer->wpe(positions);
  std::int64_t i = 0;
  for (const auto& block : *transformer->h) x = block->as<GptBlock>()->forward_cached(x, i++, step);
  if (step && step->logit_rows.defined()) x = x.index_select(1, step->logit_rows);
  x = transformer->ln_f(x);
  if (keep_last > 0 && keep_last < x.size(1)) x = x.narrow(1, x.size(1) - keep_last, keep_last);
  return torch::nn::functional::linear(x, transformer->wte->weight);
}

GptConfig gpt_config_from(const Config& cfg, GptConfig c) {
  return decoder_sizes_from(cfg, c, {"vocab_size", "n_positions", "n_layer", "n_embd", "n_head"}, "GPT");
}

bool convert_megatron_gpt_names(std::map<std::string, torch::Tensor>& tensors) {
  const auto has = [&](const std::string& name) { return tensors.count(name) || tensors.count("module." + name); };
  if (!has("word_embeddings.weight") || has("transformer.wte.weight")) return false;
  // Megatron's part of a name → Hugging Face's, and whether the weight is a linear's (out, in).
  static const std::vector<std::tuple<std::string, std::string, bool>> kLayerParts = {
      {"input_layernorm.", "ln_1.", false},       {"attention.query_key_value.", "attn.c_attn.", true},
      {"attention.dense.", "attn.c_proj.", true}, {"post_attention_layernorm.", "ln_2.", false},
      {"mlp.dense_h_to_4h.", "mlp.c_fc.", true},  {"mlp.dense_4h_to_h.", "mlp.c_proj.", true},
  };
  std::map<std::string, torch::Tensor> renamed;
  for (auto& [original, tensor] : tensors) {
    std::string name = original.rfind("module.", 0) == 0 ? original.substr(7) : original;
    torch::Tensor value = tensor;
    const std::string layers = "transformer.layers.";
    if (name == "word_embeddings.weight") {
      name = "transformer.wte.weight";
    } else if (name == "position_embeddings.weight") {
      name = "transformer.wpe.weight";
    } else if (name.rfind("transformer.final_layernorm.", 0) == 0) {
      name = "transformer.ln_f." + name.substr(std::string("transformer.final_layernorm.").size());
    } else if (name.rfind(layers, 0) == 0) {
      const auto dot = name.find('.', layers.size());
      const std::string index = name.substr(layers.size(), dot - layers.size());
      const std::string rest = dot == std::string::npos ? "" : name.substr(dot + 1);
      for (const auto& [megatron, hugging_face, linear] : kLayerParts) {
        if (rest.rfind(megatron, 0) != 0) continue;
        const std::string leaf = rest.substr(megatron.size());
        name = "transformer.h." + index + "." + hugging_face + leaf;
        if (linear && leaf == "weight" && value.dim() == 2) value = value.t().contiguous();
        break;
      }
    }
    renamed[name] = value;
  }
  tensors = std::move(renamed);
  return true;
}

double GptConfig::forward_flops(std::int64_t tokens, std::int64_t logit_positions) const {
  const auto h = static_cast<double>(hidden), t = static_cast<double>(tokens);
  return 2 * (static_cast<double>(layers) * (t * 12 * h * h + t * t * h) +
              static_cast<double>(logit_positions) * h * static_cast<double>(vocab));
}

double GptLMHeadModelImpl::training_flops_per_token(std::int64_t tokens) const {
  const auto h = static_cast<double>(config.hidden), l = static_cast<double>(config.layers);
  const double per_layer = 12 * h * h + 13 * h;  // the linears and norms of a block
  const double used = l * per_layer + 2 * h + static_cast<double>(config.vocab) * h;
  return 6 * used + 12 * l * h * static_cast<double>(tokens);
}

}  // namespace xpuperf::models
