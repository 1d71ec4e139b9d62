#include "xpuperf/models/bert.h"

#include <tuple>

#include "xpuperf/models/fused_ops.h"
#include "xpuperf/models/linear.h"
#include "xpuperf/models/stacked_weights.h"
#include "xpuperf/models/vocabulary_output.h"
#include "xpuperf/torchrt/compat.h"
#include "xpuperf/torchrt/init.h"

namespace xpuperf::models {

namespace nn = torch::nn;

namespace {

constexpr double kBertInitStd = 0.02;

template <typename Layer = nn::Linear>
Layer bert_linear(std::int64_t in, std::int64_t out) {
  return torchrt::normal_linear<Layer>(in, out, /*bias=*/true, kBertInitStd);
}

nn::LayerNorm bert_norm(const BertConfig& c) {
  return nn::LayerNorm(nn::LayerNormOptions({c.hidden}).eps(c.layer_norm_eps));
}

nn::Embedding bert_embedding(std::int64_t n, std::int64_t d) {
  return torchrt::normal_embedding(n, d, kBertInitStd);
}

}  // namespace

BertSelfAttentionImpl::BertSelfAttentionImpl(const BertConfig& c) {
  using parallel::ColumnParallelLinear;
  query = register_module("query", bert_linear<ColumnParallelLinear>(c.hidden, c.hidden));
  key = register_module("key", bert_linear<ColumnParallelLinear>(c.hidden, c.hidden));
  value = register_module("value", bert_linear<ColumnParallelLinear>(c.hidden, c.hidden));
}

BertAddNormImpl::BertAddNormImpl(std::int64_t in, const BertConfig& c) {
  dense = register_module("dense", bert_linear<parallel::RowParallelLinear>(in, c.hidden));
  LayerNorm = register_module("LayerNorm", bert_norm(c));
  dropout = register_module("dropout", nn::Dropout(c.dropout));
}

torch::Tensor BertAddNormImpl::forward(const torch::Tensor& x, const torch::Tensor& residual) {
  const double eps = LayerNorm->options.eps();
  parallel::TensorParallel* sequence = sequence_group.get();
  const auto weight = parallel::whole_parameter(sequence, LayerNorm->weight);
  const auto bias = parallel::whole_parameter(sequence, LayerNorm->bias);
  if (fused_kernels && !is_training()) return fused::add_layer_norm(dense(x), residual, weight, bias, eps, true).second;
  // Training: the dropout, the add and the norm as one kernel each way. The residual goes first: the
  // kernel's output has its type (float under autocast, as ATen's layer norm gives there).
  if (fused_kernels && kernel_in_training)
    return fused::add_layer_norm(residual, dense(x), weight, bias, eps, true, dropout->options.p()).second;
  return parallel::layer_norm(LayerNorm, dropout(dense(x)) + residual, sequence);
}

std::pair<torch::Tensor, torch::Tensor> BertAddNormImpl::forward_with_copy(const torch::Tensor& x,
                                                                           const torch::Tensor& residual) {
  if (!(fused_kernels && kernel_in_training && is_training())) return {forward(x, residual), torch::Tensor()};
  parallel::TensorParallel* sequence = sequence_group.get();
  const auto [sum, out, low] = fused::add_layer_norm_with_copy(
      residual, dense(x), parallel::whole_parameter(sequence, LayerNorm->weight),
      parallel::whole_parameter(sequence, LayerNorm->bias), LayerNorm->options.eps(), true, dropout->options.p());
  return {out, low};
}

BertAttentionImpl::BertAttentionImpl(const BertConfig& c) : heads(c.heads), attention_dropout(c.attention_dropout) {
  TORCH_CHECK(c.hidden % c.heads == 0, "BERT: hidden size ", c.hidden, " is not a multiple of the ", c.heads, " heads");
  self = register_module("self", BertSelfAttention(c));
  output = register_module("output", BertAddNorm(c.hidden, c));
}

torch::Tensor BertAttentionImpl::attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                        const torch::Tensor& keep) {
  const auto b = q.size(0), t = q.size(1), width = q.size(2), hd = width / heads;
  const auto by_head = [&](const torch::Tensor& y) { return y.view({b, t, heads, hd}).transpose(1, 2); };
  return compat::attention(by_head(q), by_head(k), by_head(v), attention_dropout, is_training(), false, keep)
      .transpose(1, 2)
      .reshape({b, t, width});
}

torch::Tensor BertAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& keep) {
  if (!is_training() && still_stacked(qkv_weight, self->query->weight) && still_stacked(qkv_bias, self->query->bias)) {
    const auto qkv = torch::linear(x, qkv_weight, qkv_bias).split(self->query->weight.size(0), -1);
    return output(attend(qkv[0], qkv[1], qkv[2], keep), x);
  }
  if (self->query->is_split() && parallel::joinable({&self->query, &self->key, &self->value})) {
    // One product of the three weights: one copy_in of x (one all-reduce of its gradient, or with
    // sequence parallelism one all-gather of the tokens), where each layer would take its own.
    const auto weight = torch::cat({self->query->weight, self->key->weight, self->value->weight});
    const auto bias = torch::cat({self->query->bias, self->key->bias, self->value->bias});
    const auto qkv =
        parallel::column_parallel_linear(self->query->group(), x, weight, bias).split(self->query->weight.size(0), -1);
    return output(attend(qkv[0], qkv[1], qkv[2], keep), x);
  }
  return output(attend(self->query(x), self->key(x), self->value(x), keep), x);
}

void BertAttentionImpl::join_projections() {
  for (const auto* l : {&self->query, &self->key, &self->value})  // whole layers only
    if ((*l)->has_adapter() || (*l)->is_split() || !(*l)->bias.defined()) return;
  if (!still_stacked(qkv_weight, self->query->weight))
    qkv_weight = stack_weights({&self->query->weight, &self->key->weight, &self->value->weight});
  if (!still_stacked(qkv_bias, self->query->bias))
    qkv_bias = stack_weights({&self->query->bias, &self->key->bias, &self->value->bias});
}

std::pair<torch::Tensor, torch::Tensor> BertAttentionImpl::forward_with_copy(const torch::Tensor& x,
                                                                             const torch::Tensor& x_low,
                                                                             const torch::Tensor& keep) {
  // One product for q, k and v: one cast of the input under autocast (none with x_low), one gradient
  // for it.
  const auto weight = torch::cat({self->query->weight, self->key->weight, self->value->weight});
  const auto bias = torch::cat({self->query->bias, self->key->bias, self->value->bias});
  const auto qkv = torch::linear(x_low.defined() ? x_low : x, weight, bias).split(self->query->weight.size(0), -1);
  return output->forward_with_copy(attend(qkv[0], qkv[1], qkv[2], keep), x);
}

void BertAttentionImpl::split(std::shared_ptr<parallel::TensorParallel> group) {
  const std::int64_t parts = group->size();
  parallel::require_divides(*group, heads, "BERT's", "attention heads (num_attention_heads)");
  for (auto* layer : {&self->query, &self->key, &self->value}) (*layer)->split(group);
  output->dense->split(group);
  heads /= parts;
}

BertIntermediateImpl::BertIntermediateImpl(const BertConfig& c) {
  dense = register_module("dense", bert_linear<parallel::ColumnParallelLinear>(c.hidden, c.intermediate));
}

torch::Tensor BertIntermediateImpl::forward(const torch::Tensor& x) {
  // In training, where the kernel runs: its backward also sums the bias's gradient. Elsewhere the product
  // with its bias (addmm), as Hugging Face's: in inference the bias rides in the product's epilogue, and
  // the kernel's pass is GELU's own.
  if (fused_kernels && is_training() && fused::kernels_run_after(*dense, x, "bias_gelu"))
    return fused::bias_gelu(torch::matmul(x, dense->weight.t()), dense->bias, true, fused::Gelu::Erf);
  return torch::gelu(dense(x));
}

BertLayerImpl::BertLayerImpl(const BertConfig& c) {
  attention = register_module("attention", BertAttention(c));
  intermediate = register_module("intermediate", BertIntermediate(c));
  output = register_module("output", BertAddNorm(c.intermediate, c));
}

torch::Tensor BertLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& keep) {
  const auto a = attention(x, keep);
  return output(intermediate(a), a);
}

bool BertLayerImpl::takes_copies(const torch::Tensor& x) {
  auto& s = *attention->self;
  return is_training() && fused::autocast_product_type(x).has_value() && attention->output->fused_kernels &&
         fused::kernels_run_after(*s.query, x, "add_layer_norm_with_copy") &&
         fused::kernels_run_after(*s.key, x, "add_layer_norm_with_copy") &&
         fused::kernels_run_after(*s.value, x, "add_layer_norm_with_copy");
}

std::pair<torch::Tensor, torch::Tensor> BertLayerImpl::forward_with_copy(const torch::Tensor& x,
                                                                         const torch::Tensor& x_low,
                                                                         const torch::Tensor& keep) {
  const auto [a, a_low] = attention->forward_with_copy(x, x_low, keep);
  return output->forward_with_copy(intermediate(a_low.defined() ? a_low : a), a);
}

void BertLayerImpl::allow_training_kernel(bool on) {
  attention->output->kernel_in_training = on;
  output->kernel_in_training = on;
}

void BertLayerImpl::split(std::shared_ptr<parallel::TensorParallel> group) {
  const std::int64_t units = intermediate->dense->weight.size(0);
  parallel::require_divides(*group, units, "BERT's", "intermediate units (intermediate_size)");
  attention->split(group);
  intermediate->dense->split(group);
  output->dense->split(group);
}

BertEmbeddingsImpl::BertEmbeddingsImpl(const BertConfig& c) {
  word_embeddings = register_module("word_embeddings", bert_embedding(c.vocab, c.hidden));
  position_embeddings = register_module("position_embeddings", bert_embedding(c.positions, c.hidden));
  token_type_embeddings = register_module("token_type_embeddings", bert_embedding(c.type_vocab, c.hidden));
  LayerNorm = register_module("LayerNorm", bert_norm(c));
  dropout = register_module("dropout", nn::Dropout(c.dropout));
}

torch::Tensor BertEmbeddingsImpl::forward(const torch::Tensor& ids, const torch::Tensor& types,
                                          const torch::Tensor& positions) {
  TORCH_CHECK(ids.size(1) <= position_embeddings->weight.size(0), "BERT: ", ids.size(1), " tokens, more than its ",
              position_embeddings->weight.size(0), " positions");
  const auto at = positions.defined() ? positions : torch::arange(ids.size(1), ids.options());
  return dropout(LayerNorm(word_embeddings(ids) + position_embeddings(at) + token_type_embeddings(types)));
}

BertEncoderImpl::BertEncoderImpl(const BertConfig& c) {
  layer = register_module("layer", nn::ModuleList());
  for (std::int64_t i = 0; i < c.layers; ++i) layer->push_back(BertLayer(c));
}

BertModelImpl::BertModelImpl(const BertConfig& c, bool with_pooler) {
  embeddings = register_module("embeddings", BertEmbeddings(c));
  encoder = register_module("encoder", BertEncoder(c));
  if (with_pooler) {
    pooler = register_module("pooler", std::make_shared<nn::Module>());
    pooler_dense = pooler->register_module("dense", bert_linear(c.hidden, c.hidden));
  }
}

torch::Tensor BertModelImpl::pool(const torch::Tensor& hidden) {
  TORCH_CHECK(pooler_dense, "BERT: this model was built without its pooler");
  return torch::tanh(pooler_dense(hidden.select(1, 0)));
}

torch::Tensor BertModelImpl::forward(const torch::Tensor& ids, const torch::Tensor& types, const torch::Tensor& keep,
                                     const torch::Tensor& positions) {
  auto x = embeddings(ids, types, positions);
  // (batch, 1, 1, tokens): a padded key takes part in no query's attention; (batch, 1, tokens,
  // tokens): each query's own keys (packed sequences).
  torch::Tensor mask;
  if (keep.defined())
    mask = keep.dim() == 3 ? keep.to(torch::kBool).unsqueeze(1)
                           : keep.to(torch::kBool).view({keep.size(0), 1, 1, keep.size(1)});
  if (mask.defined() && !is_training()) {
    // In inference, the mask added to the scores (0 or −inf, in the products' type) made once here,
    // where the attention would turn the boolean one into it in every layer.
    const auto type = fused::autocast_product_type(x).value_or(x.scalar_type());
    mask = torch::zeros(mask.sizes(), x.options().dtype(type)).masked_fill(mask.logical_not(), -INFINITY);
  }
  // With sequence parallelism the layers take a rank's tokens, and the heads all of them.
  if (!sequence_group) return encoder->forward(x, mask);
  return sequence_group->gather_for_whole(encoder->forward(sequence_group->share_of_whole(x), mask));
}

torch::Tensor BertEncoderImpl::forward(torch::Tensor x, const torch::Tensor& mask) {
  if (!layer->is_empty() && !wraps_blocks()) {
    if (layer->ptr<BertLayerImpl>(0)->takes_copies(x)) {
      torch::Tensor low;
      for (const auto& l : *layer) {
        BertLayerImpl* block = l->as<BertLayer>();
        block->allow_training_kernel(true);
        std::tie(x, low) = block->forward_with_copy(x, low, mask);
      }
      return x;
    }
  }
  for (const auto& l : *layer) {
    BertLayerImpl* block = l->as<BertLayer>();
    block->allow_training_kernel(!wraps_blocks());  // as GPT's joined blocks: not where blocks are wrapped
    x = run_block(
        *block, [block, mask](const torch::Tensor& t) { return block->forward(t, mask); }, x);
  }
  return x;
}

std::vector<torch::nn::Module*> BertEncoderImpl::blocks() {
  std::vector<torch::nn::Module*> list;
  for (const auto& l : *layer) list.push_back(l.get());
  return list;
}

BertTransformImpl::BertTransformImpl(const BertConfig& c) {
  dense = register_module("dense", bert_linear(c.hidden, c.hidden));
  LayerNorm = register_module("LayerNorm", bert_norm(c));
}

BertPredictionsImpl::BertPredictionsImpl(const BertConfig& c) {
  transform = register_module("transform", BertTransform(c));
  bias = register_parameter("bias", torch::zeros({c.vocab}));
}

BertMlmHeadImpl::BertMlmHeadImpl(const BertConfig& c) {
  predictions = register_module("predictions", BertPredictions(c));
}

BertForMaskedLMImpl::BertForMaskedLMImpl(const BertConfig& c) : config(c) {
  bert = register_module("bert", BertModel(c));
  cls = register_module("cls", BertMlmHead(c));
}

void BertForMaskedLMImpl::split_for_tensor_parallel(std::shared_ptr<parallel::TensorParallel> tp) {
  if (tp->sequence_parallel()) bert->sequence_group = tp;
  for (const auto& layer : *bert->encoder->layer) {
    auto* l = layer->as<BertLayer>();
    l->split(tp);
    if (tp->sequence_parallel()) l->attention->output->sequence_group = l->output->sequence_group = tp;
  }
}

void BertForMaskedLMImpl::join_projections_for_inference() {
  for (const auto& l : *bert->encoder->layer) l->as<BertLayer>()->attention->join_projections();
}

void BertForMaskedLMImpl::use_fused_kernels(bool on) {
  fused_kernels = on;
  for (const auto& layer : *bert->encoder->layer) {
    auto* l = layer->as<BertLayer>();
    l->attention->output->fused_kernels = on;
    l->intermediate->fused_kernels = on;
    l->output->fused_kernels = on;
  }
}

torch::Tensor BertForMaskedLMImpl::predict(const torch::Tensor& hidden, const torch::Tensor& labels) {
  return head(hidden.reshape({-1, hidden.size(-1)}).index({labels.reshape({-1}) >= 0}), /*padded=*/false);
}

torch::Tensor BertForMaskedLMImpl::head(const torch::Tensor& rows, bool padded) {
  auto& p = cls->predictions;
  const auto h = p->transform->LayerNorm(torch::gelu(linear(*p->transform->dense, rows)));
  return vocabulary_logits(h, bert->embeddings->word_embeddings->weight, p->bias, padded);  // the tied decoder
}

torch::Tensor BertForMaskedLMImpl::predict_tokens(const torch::Tensor& ids, const torch::Tensor& keep) {
  const auto hidden = bert(ids, torch::zeros_like(ids), keep);
  return fused::argmax(head(hidden.reshape({-1, hidden.size(-1)}), ids.is_cuda()), fused_kernels).view(ids.sizes());
}

BertConfig bert_config_from(const Config& cfg, BertConfig c) {
  c.vocab = cfg.get_int("vocab_size", c.vocab);
  c.positions = cfg.get_int("max_position_embeddings", c.positions);
  c.layers = cfg.get_int("num_hidden_layers", c.layers);
  c.hidden = cfg.get_int("hidden_size", c.hidden);
  c.heads = cfg.get_int("num_attention_heads", c.heads);
  c.intermediate = cfg.get_int("intermediate_size", c.intermediate);
  if (c.vocab < 2 || c.positions < 8 || c.layers < 1 || c.heads < 1 || c.intermediate < 1 || c.hidden < c.heads ||
      c.hidden % c.heads != 0)
    throw ConfigError("BERT's sizes do not fit: vocab_size " + std::to_string(c.vocab) + ", max_position_embeddings " +
                      std::to_string(c.positions) + ", num_hidden_layers " + std::to_string(c.layers) +
                      ", hidden_size " + std::to_string(c.hidden) + " (a multiple of num_attention_heads " +
                      std::to_string(c.heads) + "), intermediate_size " + std::to_string(c.intermediate));
  return c;
}

double BertConfig::forward_flops_per_token(std::int64_t tokens) const {
  const auto h = static_cast<double>(hidden), l = static_cast<double>(layers);
  const double linears = l * (4 * h * h + 2 * h * static_cast<double>(intermediate))  // attention and MLP
                         + h * h + h * static_cast<double>(vocab);                    // head transform, decoder
  return 2 * linears + 4 * l * h * static_cast<double>(tokens);                       // + q·kᵀ and weights·v
}

std::pair<torch::Tensor, torch::Tensor> BertForMaskedLMImpl::loss_and_accuracy(
    const torch::Tensor& ids, const torch::Tensor& types, const torch::Tensor& keep, const torch::Tensor& labels,
    std::int64_t max_predictions, const torch::Tensor& positions) {
  const auto hidden = bert->forward(ids, types, keep, positions);
  const auto flat = labels.reshape({-1});
  torch::Tensor rows;
  if (max_predictions > 0) {
    // The masked positions first (a stable sort keeps their order), then unmasked ones (label
    // −100, which the loss ignores) up to a fixed count: no host synchronisation, the same shapes
    // every step (CUDA graphs).
    const auto order = std::get<1>(torch::sort(flat.ge(0).to(torch::kInt), /*stable=*/true, 0, /*descending=*/true));
    rows = order.narrow(0, 0, std::min(max_predictions, flat.size(0)));
  } else {
    rows = flat.ge(0).nonzero().squeeze(1);
  }
  const auto targets = flat.index_select(0, rows);
  const auto logits = head(hidden.reshape({-1, hidden.size(-1)}).index_select(0, rows), ids.is_cuda());
  const auto loss = token_cross_entropy(logits, targets, fused_kernels);  // the −100 rows ignored
  const auto real = targets.ge(0);
  const auto accuracy = (logits.argmax(-1).eq(targets) & real).sum().to(torch::kFloat) / real.sum().to(torch::kFloat);
  return {loss, accuracy};
}

double BertForMaskedLMImpl::training_flops_per_token(std::int64_t tokens, double predicted) const {
  const auto h = static_cast<double>(config.hidden), l = static_cast<double>(config.layers);
  const auto i = static_cast<double>(config.intermediate), v = static_cast<double>(config.vocab);
  const double layer = 4 * h * h + 2 * h * i;  // the linears' weights of a block
  return 6 * l * layer + 12 * l * h * static_cast<double>(tokens) + 6 * (h * h + h * v) * predicted;
}

}  // namespace xpuperf::models
