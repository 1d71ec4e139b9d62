#pragma once
// GPT decoder with GPT-2's layout (learned positions, pre-norm blocks, tanh GELU, the output
// layer tied to the token embedding), laid out and named as Hugging Face's GPT2LMHeadModel so its
// state_dict loads unchanged: its linears are "Conv1D"s, weights stored (in, out). Sizes come
// from the config: GPT-2 small (12 layers, 768 wide, 12 heads, 1,024 positions) has 124,439,808
// parameters; Megatron's GPT 1.3B (24 layers, 2,048, 32 heads) is Rapidformer's. Blocks are
// modules of their own and the linears one type, so checkpointing and tensor-parallel switches
// can wrap or replace them; the stack splits into pipeline stages.

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>

#include "xpuperf/core/config.h"
#include "xpuperf/models/kv_cache.h"
#include "xpuperf/parallel/activation_checkpoint.h"
#include "xpuperf/parallel/parallel_linear.h"
#include "xpuperf/parallel/pipeline.h"

namespace xpuperf::models {

struct GptConfig {
  std::int64_t vocab = 50257, positions = 1024, layers = 12, hidden = 768, heads = 12;
  double dropout = 0.1;  // Hugging Face's default for embeddings, residuals and attention
  double layer_norm_eps = 1e-5;
  // GLM's second position id (a token's place within its span): a table of `positions` more.
  bool block_positions = false;

  static GptConfig gpt2_small() { return {}; }
  static GptConfig megatron_1_3b() { return {50257, 1024, 24, 2048, 32, 0.1, 1e-5}; }
  // CPM-1 medium (FlagPerf's cpm case): GPT-2's layout with a 30,000-piece SentencePiece vocabulary.
  static GptConfig cpm1_medium() { return {30000, 1024, 24, 1024, 16, 0.1, 1e-5}; }
  // Forward FLOPs of a sequence of `tokens` with logits at `logit_positions` of them (2 × the
  // multiply-adds of the linears; the causal attention products).
  double forward_flops(std::int64_t tokens, std::int64_t logit_positions) const;
};

// `base` with the sizes a config sets, in Hugging Face's GPT2Config names (vocab_size, n_positions,
// n_layer, n_embd, n_head) and `dropout`; ConfigError naming them when they do not fit.
GptConfig gpt_config_from(const Config& cfg, GptConfig base);

// The names a GPT-style decoder's sizes go by in a config (GPT-2's, GLM's).
struct DecoderSizeKeys {
  const char *vocab, *positions, *layers, *hidden, *heads;
};

// `c` (a GptConfig, or a config with the same size fields) with the sizes the config sets under
// `keys` and `dropout`; ConfigError naming the keys and `model` when they do not fit.
template <typename Sizes>
Sizes decoder_sizes_from(const Config& cfg, Sizes c, const DecoderSizeKeys& keys, const std::string& model) {
  c.vocab = cfg.get_int(keys.vocab, c.vocab);
  c.positions = cfg.get_int(keys.positions, c.positions);
  c.layers = cfg.get_int(keys.layers, c.layers);
  c.hidden = cfg.get_int(keys.hidden, c.hidden);
  c.heads = cfg.get_int(keys.heads, c.heads);
  c.dropout = cfg.get_number("dropout", c.dropout);
  if (c.vocab < 2 || c.positions < 1 || c.layers < 1 || c.heads < 1 || c.hidden < c.heads || c.hidden % c.heads != 0)
    throw ConfigError("the " + model + "'s sizes do not fit: " + keys.vocab + " " + std::to_string(c.vocab) + ", " +
                      keys.positions + " " + std::to_string(c.positions) + ", " + keys.layers + " " +
                      std::to_string(c.layers) + ", " + keys.hidden + " " + std::to_string(c.hidden) +
                      " (a multiple of " + keys.heads + " " + std::to_string(c.heads) + ")");
  return c;
}

// A state_dict in the names of CPM-1 and Megatron-LM's first GPT-2 (word_embeddings,
// position_embeddings, transformer.layers.<i>.{input_layernorm, attention.query_key_value,
// attention.dense, post_attention_layernorm, mlp.dense_h_to_4h, mlp.dense_4h_to_h},
// transformer.final_layernorm; linears stored (out, in); q, k and v a third of the fused rows
// each), as CPM's cpm_model_states_medium.pt holds, renamed to this model's and its linears
// transposed, in place. A leading "module." (DeepSpeed's wrapper) is dropped. Anything else is left
// as it is. Returns whether it was that layout.
bool convert_megatron_gpt_names(std::map<std::string, torch::Tensor>& tensors);

// What GLM (models/glm.h) gives the decoder beyond the token ids; each undefined is GPT's.
struct GptExtraInputs {
  torch::Tensor positions;        // (batch, tokens); GPT's: 0, 1, ...
  torch::Tensor block_positions;  // (batch, tokens), into wbpe (GptConfig::block_positions)
  torch::Tensor attention_mask;   // (batch, 1, tokens, tokens) bool, true where a token may attend; GPT's: causal
};

struct GptAttentionImpl : torch::nn::Module {
  explicit GptAttentionImpl(const GptConfig& c);
  // (batch, tokens, hidden); causal unless `mask` (GptExtraInputs::attention_mask) says otherwise.
  // `resid_dropout` false: the output before resid_dropout, for a caller that drops it out itself
  // (the residual add's kernel).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask = {}, bool resid_dropout = true);
  // Inference with the KV cache (layer: this block's index); not split.
  torch::Tensor forward_cached(const torch::Tensor& x, std::int64_t layer, const KvStep* step);
  // Tensor parallelism: keeps this rank's heads (c_attn's columns of them, c_proj's rows).
  void split(std::shared_ptr<parallel::TensorParallel> group);
  std::int64_t heads;  // this rank's
  double dropout;
  parallel::Conv1D c_attn{nullptr}, c_proj{nullptr};
  torch::nn::Dropout resid_dropout{nullptr};
};
TORCH_MODULE(GptAttention);

struct GptMlpImpl : torch::nn::Module {
  explicit GptMlpImpl(const GptConfig& c);
  // `drop` false: the output before its dropout (as GptAttentionImpl::forward's resid_dropout).
  // `kernels`: c_fc's bias and GELU as one kernel each way (fused::bias_gelu) on CUDA, where c_fc is
  // whole and has no LoRA adapter.
  torch::Tensor forward(const torch::Tensor& x, bool drop = true, bool kernels = false);
  // Tensor parallelism: keeps this rank's hidden units (c_fc's columns, c_proj's rows).
  void split(std::shared_ptr<parallel::TensorParallel> group);
  parallel::Conv1D c_fc{nullptr}, c_proj{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(GptMlp);

// x + attn(ln_1(x)), then + mlp(ln_2(.)).
struct GptBlockImpl : torch::nn::Module {
  explicit GptBlockImpl(const GptConfig& c);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask = {});
  // The block with the residual add before it joined to ln_1 (fused::add_layer_norm): from the
  // residual stream and the previous block's MLP output (undefined for the first block), this
  // block's residual stream after attention and its MLP output, which the next norm adds. The
  // residual dropouts run in those adds' kernels, so the MLP output comes back before its dropout.
  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& residual, const torch::Tensor& delta,
                                                  bool kernels, const torch::Tensor& mask = {});
  torch::Tensor forward_cached(const torch::Tensor& x, std::int64_t layer, const KvStep* step);
  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  GptAttention attn{nullptr};
  GptMlp mlp{nullptr};
  // With sequence parallelism (parallel/tensor_parallel.h): the norms run on a rank's tokens, their
  // parameters' gradients summed over the group. Null without.
  std::shared_ptr<parallel::TensorParallel> sequence_group;
};
TORCH_MODULE(GptBlock);

// transformer.{wte, wpe, h.<i>, ln_f}, and wbpe with block positions.
struct GptModelImpl : torch::nn::Module, parallel::BlockStack {
  explicit GptModelImpl(const GptConfig& c);
  std::vector<torch::nn::Module*> blocks() override;
  // (batch, tokens) -> hidden states. A pipeline stage after the first takes the previous stage's
  // output instead of embedding `ids`; one before the last returns its blocks' output, not normed.
  // `kernels`: each residual add and the norm after it as one kernel, forward and backward, where the
  // blocks run whole (not split into stages, checkpointed or hooked by ZeRO-3).
  torch::Tensor forward(const torch::Tensor& ids, bool kernels = false, const GptExtraInputs* extra = nullptr);
  std::shared_ptr<parallel::PipelineStage> stage;  // null: the whole model
  torch::nn::Embedding wte{nullptr}, wpe{nullptr}, wbpe{nullptr};
  torch::nn::Dropout drop{nullptr};
  torch::nn::ModuleList h{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
  // With sequence parallelism: the embeddings' output is cut to a rank's tokens for the blocks, and
  // ln_f's output gathered from every rank's for the whole output layer. Null without.
  std::shared_ptr<parallel::TensorParallel> sequence_group;
};
TORCH_MODULE(GptModel);

struct GptLMHeadModelImpl : torch::nn::Module, parallel::TensorParallelModel, parallel::PipelineModel, CausalDecoder {
  explicit GptLMHeadModelImpl(const GptConfig& c = GptConfig::gpt2_small());
  torch::Tensor forward(const torch::Tensor& ids);  // (batch, tokens) -> logits (batch, tokens, vocab)
  // The mean cross entropy of predicting ids[:, 1:] from ids[:, :-1] (what the case trains on).
  // Split into pipeline stages, only the last computes them; the others hand their output on and
  // return the stage's placeholder.
  // `documents` (batch, tokens + 1; undefined: none): each token's document, which it attends within,
  // its position counted from the document's start (models/documents.h).
  torch::Tensor loss(const torch::Tensor& ids, const torch::Tensor& documents = {});
  // The loss through the cross-entropy kernels, and the residual adds with the layer norms after
  // them through the add + LayerNorm kernels, where they apply (fused_ops.h).
  bool fused_kernels = false;

  // Training FLOPs per token at `tokens` positions: 6 × the parameters a token's compute uses
  // (all but the position table; the tied embedding counts as the output layer) + the attention
  // products, 12 × layers × hidden × tokens (PaLM's count). What MFU divides by.
  double training_flops_per_token(std::int64_t tokens) const;
  // What Hugging Face's state_dict holds twice: lm_head.weight, a copy of transformer.wte.weight.
  static std::map<std::string, std::string> tied_weights() { return {{"lm_head.weight", "transformer.wte.weight"}}; }
  // Megatron's split of every block: attention heads and MLP units over the group; embeddings,
  // norms and the (tied) output layer stay whole. With the group's sequence parallelism the blocks'
  // norms, dropouts and residual stream run on a rank's share of the tokens.
  void split_for_tensor_parallel(std::shared_ptr<parallel::TensorParallel> tp) override;
  bool takes_sequence_parallel() const override { return true; }
  // Pipeline stages: an equal share of the blocks each; the first stage keeps the embeddings, the
  // last the final norm and the output layer (the tied token embedding, so both hold it).
  void split_for_pipeline(std::shared_ptr<parallel::PipelineStage> stage) override;
  std::vector<torch::Tensor> tied_across_stages() override;

  // Generation (the whole model, not split): logits of the last `keep_last` positions.
  torch::Tensor decoder_logits(const torch::Tensor& ids, const KvStep* step, std::int64_t keep_last) override;
  std::int64_t decoder_layers() const override { return config.layers; }
  std::int64_t kv_heads() const override { return config.heads; }
  std::int64_t head_dim() const override { return config.hidden / config.heads; }
  std::int64_t max_positions() const override { return config.positions; }
  std::int64_t vocab_size() const override { return config.vocab; }
  GptConfig config;
  GptModel transformer{nullptr};
};
TORCH_MODULE(GptLMHeadModel);

}  // namespace xpuperf::models
