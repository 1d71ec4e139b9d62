#pragma once
// A Llama-style decoder (RMSNorm, rotary positions, SwiGLU MLP, grouped-query attention, no
// biases, an output layer of its own or tied to the embedding), laid out and named as Hugging
// Face's LlamaForCausalLM so its state_dict loads unchanged. Sizes come from the config: TinyLlama-1.1B's shape (22
// layers, 2,048 wide, 32 query / 4 key-value heads) has 1,100,048,384 parameters, Llama-2-7B's 6,738,415,616.
// Generation uses the KV cache of kv_cache.h.

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "xpuperf/core/config.h"
#include "xpuperf/models/documents.h"
#include "xpuperf/models/kv_cache.h"
#include "xpuperf/models/moe.h"
#include "xpuperf/parallel/activation_checkpoint.h"
#include "xpuperf/parallel/parallel_linear.h"

namespace xpuperf::models {

struct LlamaConfig {
  std::int64_t vocab = 32000, hidden = 2048, intermediate = 5632, layers = 22, heads = 32, kv_heads = 4;
  std::int64_t max_positions = 2048;
  double rms_norm_eps = 1e-5, rope_theta = 10000.0;
  // The output layer is the embedding's matrix (Llama 3.2's 1B and 3B): no lm_head of its own.
  bool tie_word_embeddings = false;
  // Llama 3.1's "llama3" rope scaling (rope_scaling in Hugging Face's config; factor 0: none):
  // wavelengths above original_max_positions / low_freq_factor are stretched by `factor`, those
  // below original_max_positions / high_freq_factor kept, the ones between blended.
  double rope_factor = 0, rope_low_freq_factor = 1, rope_high_freq_factor = 4;
  std::int64_t rope_original_max_positions = 8192;
  // Mixture of experts (moe.h; Mixtral's shape: 8 experts, 2 a token): moe.experts 0 is dense.
  MoeConfig moe = MoeConfig();
  bool sparse_layer(std::int64_t layer) const { return moe.experts > 0 && layer % moe.every == 0; }
  std::int64_t expert_units() const { return moe.expert_intermediate > 0 ? moe.expert_intermediate : intermediate; }

  static LlamaConfig tinyllama_1_1b() { return {}; }
  static LlamaConfig llama2_7b() { return {32000, 4096, 11008, 32, 32, 32, 4096, 1e-5, 10000.0}; }
  // Meta's Llama 3 shapes: 1,235,814,400, 3,212,749,824 and 8,030,261,248 parameters.
  static LlamaConfig llama3_2_1b();
  static LlamaConfig llama3_2_3b();
  static LlamaConfig llama3_8b();
  // Mistral AI's Mixtral-8x7B: 32 layers of 4,096, 8 experts of 14,336 units, 2 a token, 32,000 ids;
  // 46,702,792,704 parameters (Hugging Face's MixtralForCausalLM).
  static LlamaConfig mixtral_8x7b();
  std::int64_t head_dim() const { return hidden / heads; }
  // What does not fit, in Hugging Face's key names; "" when the sizes and settings make a model.
  std::string problem() const;
  std::int64_t parameter_count() const;
  // Forward FLOPs of a sequence of `tokens` (2 × the multiply-adds of the linears, the attention
  // products causal, so half of them) with logits at the last `logit_positions` positions.
  double forward_flops(std::int64_t tokens, std::int64_t logit_positions) const;
  // Training FLOPs a token of a sequence of `tokens`: 3 × the forward's (backward twice the
  // forward), logits at every position.
  double training_flops_per_token(std::int64_t tokens) const;
  // The rotary inverse frequencies (head_dim / 2, float32), scaled as rope_factor says.
  torch::Tensor inverse_frequencies(const torch::TensorOptions& options) const;
};

// `base` with the sizes and settings a config sets, in Hugging Face's names (vocab_size,
// hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, num_key_value_heads,
// max_position_embeddings, rms_norm_eps, rope_theta, tie_word_embeddings; Llama 3.1's rope scaling as
// rope_scaling_factor (0: none), rope_low_freq_factor, rope_high_freq_factor,
// rope_original_max_position_embeddings); ConfigError saying what does not fit.
LlamaConfig llama_config_from(const Config& cfg, LlamaConfig base);

// x / rms(x) × weight, computed in float32 as Hugging Face's LlamaRMSNorm.
struct LlamaRMSNormImpl : torch::nn::Module {
  LlamaRMSNormImpl(std::int64_t width, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  // (x + delta, the norm of x + delta): the residual stream's add and this norm, one CUDA kernel
  // where fused_ops.h can (delta undefined: (x, the norm of x)). `to_products`: only products read
  // the norm, so under autocast it is written in their type (fused::autocast_product_type), once,
  // where each product would cast a float output.
  std::pair<torch::Tensor, torch::Tensor> add_forward(const torch::Tensor& x, const torch::Tensor& delta, bool kernels,
                                                      bool to_products = false);
  torch::Tensor weight;
  double eps;
  // With sequence parallelism (parallel/tensor_parallel.h): each rank norms its own tokens, so the
  // weight's gradient is summed over the group. Null without.
  std::shared_ptr<parallel::TensorParallel> sequence_group;

 private:
  torch::Tensor used_weight() const;
};
TORCH_MODULE(LlamaRMSNorm);

// What the layers of one forward share. The rotary positions: x × cos + roll(x, half) × sin_signed
// over the head width (Hugging Face's x × cos + rotate_half(x) × sin, with rotate_half's sign
// folded into the sines); the cache step, if any; whether the fused CUDA kernels run (fused_ops.h).
struct LlamaForward {
  torch::Tensor cos, sin_signed;  // (batch or 1, tokens, 1, head_dim), in the activations' type
  const KvStep* step = nullptr;
  bool kernels = false;
  torch::Tensor
      mask;  // (batch, 1, tokens, tokens) bool, true where a token may attend (packed documents); undefined: causal
  torch::Tensor rotate(const torch::Tensor& x) const;  // x (batch, tokens, heads, head_dim)
};

struct LlamaAttentionImpl : torch::nn::Module {
  explicit LlamaAttentionImpl(const LlamaConfig& c);
  torch::Tensor forward(const torch::Tensor& x, const LlamaForward& f, std::int64_t layer);
  // For inference: q, k and v in one matrix (their weights become views of it, so the state_dict
  // keeps Hugging Face's names), one GEMM instead of three. Undone by anything that moves the
  // weights (the forward then runs them apart); a no-op while in place.
  void fuse_projections();
  // Whether q, k and v run as one product of their weights concatenated (with the kernels, no
  // adapter, no cache step; in training too, where fuse_projections' views would take no gradient):
  // one input gradient, which the norm before them takes in the products' type, and under tensor
  // parallelism one all-reduce of it instead of three.
  bool joins_projections(const LlamaForward& f) const;
  // Tensor parallelism: keeps this rank's query heads and key/value heads (q, k and v's rows of
  // them, o's columns). Training only: generation's KV cache holds the whole model's heads.
  void split(std::shared_ptr<parallel::TensorParallel> group);
  std::int64_t heads, kv_heads, head_dim;  // this rank's heads
  parallel::ColumnParallelLinear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr};
  parallel::RowParallelLinear o_proj{nullptr};
  torch::Tensor qkv_weight;
};
TORCH_MODULE(LlamaAttention);

// down(silu(gate(x)) × up(x))
struct LlamaMLPImpl : torch::nn::Module {
  explicit LlamaMLPImpl(const LlamaConfig& c);
  torch::Tensor forward(const torch::Tensor& x, bool kernels = false);
  void fuse_projections();  // gate and up in one matrix, as the attention's q, k, v
  // Whether gate and up read their input once (with the kernels, no adapter): one input gradient, and
  // under tensor parallelism one all-reduce of it instead of two.
  bool joins_projections(bool kernels) const;
  // Tensor parallelism: this rank's intermediate units (gate and up's rows, down's columns).
  void split(std::shared_ptr<parallel::TensorParallel> group);
  parallel::ColumnParallelLinear gate_proj{nullptr}, up_proj{nullptr};
  parallel::RowParallelLinear down_proj{nullptr};
  torch::Tensor gate_up_weight;
};
TORCH_MODULE(LlamaMLP);

struct LlamaDecoderLayerImpl : torch::nn::Module {
  // Layer `index`: its MLP is a SparseMoeBlock (block_sparse_moe, Mixtral's name) where the
  // config makes it sparse.
  LlamaDecoderLayerImpl(const LlamaConfig& c, std::int64_t index);
  // The layer's input is residual + delta (the previous layer's output, added here with the norm
  // that follows it; undefined for the first layer). Returns the residual stream after attention and
  // the MLP's output, which the next layer (or the final norm) adds.
  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& residual, const torch::Tensor& delta,
                                                  const LlamaForward& f, std::int64_t layer);
  LlamaRMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
  LlamaAttention self_attn{nullptr};
  LlamaMLP mlp{nullptr};
  SparseMoeBlock moe{nullptr};
};
TORCH_MODULE(LlamaDecoderLayer);

// model.{embed_tokens, layers.<i>, norm}. Its layers are the blocks the runtime's switches act
// on (activation checkpointing, ZeRO-3): where one is set, each layer runs whole, x → x + its
// attention and MLP, through run_block; otherwise a layer hands its MLP's output to the next
// layer's norm, which adds it (one kernel with fused kernels).
struct LlamaModelImpl : torch::nn::Module, parallel::BlockStack {
  explicit LlamaModelImpl(const LlamaConfig& c);
  // (batch, tokens) -> hidden states; kernels: the fused CUDA kernels where they apply.
  // `documents`: packed documents' positions and mask (models/documents.h); null: 0, 1, ... and causal.
  torch::Tensor forward(const torch::Tensor& ids, const KvStep* step, bool kernels = false,
                        const DocumentAttention* documents = nullptr);
  std::vector<torch::nn::Module*> blocks() override;
  LlamaConfig config;
  parallel::VocabParallelEmbedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  LlamaRMSNorm norm{nullptr};
  // With sequence parallelism: the last hidden state is gathered from the ranks' tokens for the
  // whole output layer. Null without.
  std::shared_ptr<parallel::TensorParallel> sequence_group;
};
TORCH_MODULE(LlamaModel);

struct LlamaForCausalLMImpl : torch::nn::Module,
                              CausalDecoder,
                              parallel::TensorParallelModel,
                              parallel::ExpertParallelModel {
  explicit LlamaForCausalLMImpl(const LlamaConfig& c = LlamaConfig::tinyllama_1_1b());
  // Each layer's heads and MLP units, and the embedding's vocabulary rows; lm_head stays whole.
  void split_for_tensor_parallel(std::shared_ptr<parallel::TensorParallel> tp) override;
  bool takes_sequence_parallel() const override { return true; }
  // Each sparse layer's experts over the group (moe.h).
  std::vector<torch::Tensor> split_for_expert_parallel(std::shared_ptr<parallel::ExpertParallel> ep) override;
  torch::Tensor forward(const torch::Tensor& ids);  // logits (batch, tokens, vocab)
  // Causal language modelling: the mean cross entropy of each token after the first given the
  // ones before, ids (batch, tokens + 1); through the cross-entropy kernels where they apply. In
  // training mode with experts, plus their routers' load-balancing and z-losses (moe.h).
  // `documents` (batch, tokens + 1; undefined: none): each token's document, which it attends within,
  // its position counted from the document's start (models/documents.h).
  torch::Tensor loss(const torch::Tensor& ids, const torch::Tensor& documents = {});
  // The sparse layers' (token, expert) pairs dropped for capacity in the last forward, of those routed.
  std::pair<std::int64_t, std::int64_t> dropped_tokens() const;
  // The output layer's matrix: lm_head's, or the embedding's where tie_word_embeddings.
  const torch::Tensor& output_weight() const;
  // For a checkpoint saved in Python: where tied, Hugging Face's state_dict also holds
  // lm_head.weight, the embedding's matrix again.
  std::map<std::string, std::string> tied_weights() const;

  torch::Tensor decoder_logits(const torch::Tensor& ids, const KvStep* step, std::int64_t keep_last) override;
  void fuse_for_inference() override;
  void use_fused_kernels(bool on) override { fused_kernels = on; }
  std::int64_t decoder_layers() const override { return config.layers; }
  std::int64_t kv_heads() const override { return config.kv_heads; }
  std::int64_t head_dim() const override { return config.head_dim(); }
  std::int64_t max_positions() const override { return 0; }
  std::int64_t vocab_size() const override { return config.vocab; }

  LlamaConfig config;
  LlamaModel model{nullptr};
  torch::nn::Linear lm_head{nullptr};  // none where tie_word_embeddings
  // The fused CUDA kernels (fused_ops.h) where they apply; ATen's operators elsewhere either way.
  // Off unless asked for (the llm case asks: its fused_kernels setting, true by default).
  bool fused_kernels = false;
};
TORCH_MODULE(LlamaForCausalLM);

}  // namespace xpuperf::models
