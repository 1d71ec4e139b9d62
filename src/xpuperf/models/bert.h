#pragma once
// BERT for masked-LM pre-training, laid out and named as Hugging Face's BertForMaskedLM so its
// state_dict loads unchanged: BERT-base (12 layers, 768 wide, 12 heads, 30,522 WordPiece ids, 512
// positions) has 109,514,298 parameters, the decoder tied to the word embedding. Post-norm
// blocks, exact GELU. The prediction head runs on the masked positions only (what the loss
// reads), not on every token. Blocks are modules of their own for checkpointing and tensor
// parallelism.

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>

#include "xpuperf/core/config.h"
#include "xpuperf/parallel/activation_checkpoint.h"
#include "xpuperf/parallel/parallel_linear.h"

namespace xpuperf::models {

struct BertConfig {
  std::int64_t vocab = 30522, positions = 512, type_vocab = 2, layers = 12, hidden = 768, heads = 12,
               intermediate = 3072;
  double dropout = 0.1, attention_dropout = 0.1, layer_norm_eps = 1e-12;

  static BertConfig base() { return {}; }
  static BertConfig large() { return {30522, 512, 2, 24, 1024, 16, 4096, 0.1, 0.1, 1e-12}; }
  // Forward FLOPs per token at `tokens` positions with the masked-LM head at every one: 2 × the
  // linears' multiply-adds (encoder, head transform, decoder) + the attention products (4 × layers
  // × hidden × tokens).
  double forward_flops_per_token(std::int64_t tokens) const;
};

// `base` with the sizes a config sets, in Hugging Face's names (vocab_size, max_position_embeddings,
// num_hidden_layers, hidden_size, num_attention_heads, intermediate_size); ConfigError naming them
// when they do not fit.
BertConfig bert_config_from(const Config& cfg, BertConfig base);

// The module tree is Hugging Face's, so the names are: bert.embeddings.*, bert.encoder.layer.<i>.
// {attention.self.{query,key,value}, attention.output.{dense,LayerNorm}, intermediate.dense,
// output.{dense,LayerNorm}}, cls.predictions.{transform.{dense,LayerNorm}, bias}.
struct BertSelfAttentionImpl : torch::nn::Module {
  explicit BertSelfAttentionImpl(const BertConfig& c);
  parallel::ColumnParallelLinear query{nullptr}, key{nullptr}, value{nullptr};
};
TORCH_MODULE(BertSelfAttention);

// dense, then LayerNorm(dropout(.) + residual): attention.output and output.
struct BertAddNormImpl : torch::nn::Module {
  BertAddNormImpl(std::int64_t in, const BertConfig& c);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& residual);
  // Training on the kernel (as forward's) under autocast: {the norm's float output, its copy in
  // dense's output type}, both from one kernel, for a next layer whose products take the copy; else
  // {forward's output, undefined}.
  std::pair<torch::Tensor, torch::Tensor> forward_with_copy(const torch::Tensor& x, const torch::Tensor& residual);
  parallel::RowParallelLinear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
  torch::nn::Dropout dropout{nullptr};
  // On CUDA the add and the LayerNorm as one kernel (fused_ops.h): in evaluation the inference
  // kernel; in training the one with a backward pass, which also draws the dropout.
  bool fused_kernels = false;
  // Whether training may take that kernel: not where activation checkpointing recomputes the block
  // (the recomputation replays the generators' draws, which ATen's dropout follows and the kernel's
  // Philox counter does not). BertEncoderImpl::forward sets it.
  bool kernel_in_training = true;
  // With sequence parallelism (parallel/tensor_parallel.h): the add and the norm run on a rank's
  // tokens, the norm's parameters' gradients summed over the group. Null without.
  std::shared_ptr<parallel::TensorParallel> sequence_group;
};
TORCH_MODULE(BertAddNorm);

struct BertAttentionImpl : torch::nn::Module {
  explicit BertAttentionImpl(const BertConfig& c);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& keep);
  // BertLayerImpl::forward_with_copy's attention: q, k and v as one product (of x_low when defined, the
  // input's copy in the products' type), and the output's norm with its copy.
  std::pair<torch::Tensor, torch::Tensor> forward_with_copy(const torch::Tensor& x, const torch::Tensor& x_low,
                                                            const torch::Tensor& keep);
  // Tensor parallelism: keeps this rank's heads (query, key and value's rows of them, the output's
  // columns).
  void split(std::shared_ptr<parallel::TensorParallel> group);
  // For inference: query, key and value's weights (and biases) made views of one stacked matrix, so
  // that forward runs them as one product while not training (a whole layer without adapters; a
  // later move or cast of the model makes copies, and forward then runs three products again).
  void join_projections();
  std::int64_t heads;  // this rank's
  double attention_dropout;
  torch::Tensor qkv_weight, qkv_bias;  // join_projections' stacks
  BertSelfAttention self{nullptr};
  BertAddNorm output{nullptr};

 private:
  // Scaled dot-product attention over q, k, v (batch, tokens, this rank's width), by head, back to
  // (batch, tokens, width): what both forwards run between their projections and their norm.
  torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                       const torch::Tensor& keep);
};
TORCH_MODULE(BertAttention);

struct BertIntermediateImpl : torch::nn::Module {
  explicit BertIntermediateImpl(const BertConfig& c);
  torch::Tensor forward(const torch::Tensor& x);  // GELU (erf form) of dense(x)
  parallel::ColumnParallelLinear dense{nullptr};
  // In training on CUDA, whole (not split, no adapter): dense's bias and GELU as the bias + GELU kernel
  // after the product without its bias (fused_ops.h), whose backward also sums the bias's gradient.
  bool fused_kernels = false;
};
TORCH_MODULE(BertIntermediate);

struct BertLayerImpl : torch::nn::Module {
  explicit BertLayerImpl(const BertConfig& c);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& keep);
  // Training on the kernels under autocast (BertEncoderImpl::forward): from x and its copy in the
  // products' type (undefined: none), {the layer's output, its copy}. Each post-norm residual keeps
  // its float output for the next residual add and gives the products a bf16 copy written by the same
  // kernel, where autocast would cast the float output once a product (q, k and v: three times) and
  // add the casts' float gradients back; q, k and v run as one product of the concatenated weights.
  std::pair<torch::Tensor, torch::Tensor> forward_with_copy(const torch::Tensor& x, const torch::Tensor& x_low,
                                                            const torch::Tensor& keep);
  // Whether forward_with_copy's kernels and joined q/k/v product apply to this layer: CUDA, training,
  // fused_kernels, autocast, no layer split or adapted (the encoder runs it only where its blocks are not
  // wrapped, and allows the layers' training kernels there).
  bool takes_copies(const torch::Tensor& x);
  // BertAddNormImpl::kernel_in_training of both of the layer's residual adds.
  void allow_training_kernel(bool on);
  // Tensor parallelism: the attention's heads and the intermediate units.
  void split(std::shared_ptr<parallel::TensorParallel> group);
  BertAttention attention{nullptr};
  BertIntermediate intermediate{nullptr};
  BertAddNorm output{nullptr};
};
TORCH_MODULE(BertLayer);

struct BertEmbeddingsImpl : torch::nn::Module {
  explicit BertEmbeddingsImpl(const BertConfig& c);
  // positions (batch, tokens): each token's position (packed sequences count from 0 in each);
  // undefined: 0, 1, 2, ...
  torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& types, const torch::Tensor& positions = {});
  torch::nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr}, token_type_embeddings{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(BertEmbeddings);

struct BertEncoderImpl : torch::nn::Module, parallel::BlockStack {
  explicit BertEncoderImpl(const BertConfig& c);
  std::vector<torch::nn::Module*> blocks() override;
  // Every layer over x; mask as BertLayer takes it.
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& mask);
  torch::nn::ModuleList layer{nullptr};
};
TORCH_MODULE(BertEncoder);

struct BertModelImpl : torch::nn::Module {
  // `pooler`: with BERT's pooler (bert.pooler.dense, tanh over the [CLS] state), as Hugging Face's
  // BertModel has it for sequence classification; BertForMaskedLM has none.
  explicit BertModelImpl(const BertConfig& c, bool pooler = false);
  // ids and token types (batch, tokens); keep: true at real tokens, false at padding (or
  // undefined: no padding), or (batch, tokens, tokens) true where a query may attend to a key
  // (packed sequences: within its own). positions as BertEmbeddings takes them. The last hidden
  // states.
  torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& types, const torch::Tensor& keep,
                        const torch::Tensor& positions = {});
  // tanh(dense(the first position's hidden state)): the sequence's vector (needs the pooler).
  torch::Tensor pool(const torch::Tensor& hidden);
  BertEmbeddings embeddings{nullptr};
  BertEncoder encoder{nullptr};
  std::shared_ptr<torch::nn::Module> pooler;  // pooler.dense (a Linear), or none
  torch::nn::Linear pooler_dense{nullptr};
  // With sequence parallelism: the embeddings' output is cut to a rank's tokens for the layers, and
  // the last hidden states gathered from every rank's. Null without.
  std::shared_ptr<parallel::TensorParallel> sequence_group;
};
TORCH_MODULE(BertModel);

struct BertTransformImpl : torch::nn::Module {
  explicit BertTransformImpl(const BertConfig& c);
  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
};
TORCH_MODULE(BertTransform);

struct BertPredictionsImpl : torch::nn::Module {
  explicit BertPredictionsImpl(const BertConfig& c);
  BertTransform transform{nullptr};
  torch::Tensor bias;  // the decoder's; its weight is the word embedding
};
TORCH_MODULE(BertPredictions);

struct BertMlmHeadImpl : torch::nn::Module {
  explicit BertMlmHeadImpl(const BertConfig& c);
  BertPredictions predictions{nullptr};
};
TORCH_MODULE(BertMlmHead);

struct BertForMaskedLMImpl : torch::nn::Module, parallel::TensorParallelModel {
  explicit BertForMaskedLMImpl(const BertConfig& c = BertConfig::base());
  // Each layer's heads and intermediate units; the embeddings and the prediction head stay whole.
  // With the group's sequence parallelism the layers' adds, norms and dropouts run on a rank's share
  // of the tokens. Split, q, k and v run as one product.
  void split_for_tensor_parallel(std::shared_ptr<parallel::TensorParallel> tp) override;
  bool takes_sequence_parallel() const override { return true; }
  // CUDA kernels where they apply: in inference each layer's residual add and LayerNorm (BertAddNorm)
  // and the predicted tokens' argmax; in training the training kernels and the loss's cross entropy
  // (fused_ops.h).
  void use_fused_kernels(bool on);
  bool fused_kernels = false;
  // Every layer's BertAttentionImpl::join_projections: q, k and v as one product in inference.
  void join_projections_for_inference();
  // Logits at the positions where labels >= 0 (the masked ones), in row-major order.
  torch::Tensor predict(const torch::Tensor& hidden, const torch::Tensor& labels);
  // The masked-LM loss (labels: the original id at masked positions, -100 elsewhere) and the share
  // of masked positions predicted right.
  // `max_predictions` > 0: at most that many masked positions in the batch, a bound known ahead
  // (the head then runs on that many rows, without a host synchronisation); 0: exactly the
  // masked ones.
  // keep and positions as BertModel takes them.
  std::pair<torch::Tensor, torch::Tensor> loss_and_accuracy(const torch::Tensor& ids, const torch::Tensor& types,
                                                            const torch::Tensor& keep, const torch::Tensor& labels,
                                                            std::int64_t max_predictions = 0,
                                                            const torch::Tensor& positions = {});
  // The most likely token at every position (batch, tokens), the head run over all of them (what
  // an inference case reads); keep: true at real tokens (undefined: no padding). Token types 0.
  torch::Tensor predict_tokens(const torch::Tensor& ids, const torch::Tensor& keep);
  // Training FLOPs per token at `tokens` positions, `predicted` (a share) of them through the head:
  // 6 × the encoder's parameters + the attention products (12 × layers × hidden × tokens) + the
  // head's 6 × (hidden² + hidden × vocab) × predicted.
  double training_flops_per_token(std::int64_t tokens, double predicted) const;
  // What Hugging Face's state_dict holds twice: the decoder, copies of the word embedding and of
  // cls.predictions.bias.
  static std::map<std::string, std::string> tied_weights() {
    return {{"cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight"},
            {"cls.predictions.decoder.bias", "cls.predictions.bias"}};
  }

  BertConfig config;
  BertModel bert{nullptr};
  BertMlmHead cls{nullptr};

 private:
  // The head's logits for hidden-state rows; `padded`: the vocabulary padded to a multiple of 64
  // with logits of −inf (what the GPU's GEMMs want), else exactly the vocabulary's.
  torch::Tensor head(const torch::Tensor& rows, bool padded);
};
TORCH_MODULE(BertForMaskedLM);

}  // namespace xpuperf::models
