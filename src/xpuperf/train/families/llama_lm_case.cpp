#include "xpuperf/train/families/llama_lm_case.h"

namespace xpuperf::train {

Datasets LlamaLmCase::datasets(const CaseContext& ctx) {
  const auto c = config_from(ctx.config);
  const std::string tokenizer = ctx.config.get_string("tokenizer", "llama3");
  if (tokenizer != "llama3" && tokenizer != "sentencepiece")
    throw ConfigError(ctx.config.at("tokenizer").source.str() +
                      ": tokenizer must be llama3 (Llama 3's ids) or sentencepiece (a SentencePiece model's, as "
                      "Llama 2's and Mixtral's tokenizer.model), got '" +
                      tokenizer + "'");
  return token_datasets(ctx, tokenizer, c.vocab, 2048, c.max_positions, "max_position_embeddings");
}

std::shared_ptr<torch::nn::Module> LlamaLmCase::model(const CaseContext& ctx) {
  const auto c = config_from(ctx.config);
  const auto tensor_parallel = ctx.switches.at("tensor_parallel").get<std::int64_t>();
  if (c.tie_word_embeddings && tensor_parallel > 1)
    throw ConfigError(
        "tensor_parallel " + std::to_string(tensor_parallel) +
        " with tie_word_embeddings: true: tensor parallelism splits the embedding's vocabulary rows, which a tied "
        "output layer would share; use tensor_parallel: 1 or a shape with its own output layer "
        "(tie_word_embeddings: false, as Llama-3-8B's)");
  if (c.moe.experts > 0 && tensor_parallel > 1)
    throw ConfigError("tensor_parallel " + std::to_string(tensor_parallel) + " with num_local_experts " +
                      std::to_string(c.moe.experts) +
                      ": splitting the experts' layers is not built (expert parallelism is their way); use "
                      "tensor_parallel: 1");
  model_ = models::LlamaForCausalLM(c);
  model_->fused_kernels = ctx.switches.at("fused_kernels").get<bool>();
  model_->to(ctx.device);
  return model_.ptr();
}

torch::Tensor LlamaLmCase::lm_loss(const torch::Tensor& ids, const torch::Tensor& documents) {
  auto loss = model_->loss(ids, documents);
  // Counted here, after the forward, and not in the layers: a checkpointed layer runs forward again
  // in backward, and evaluation routes tokens too.
  if (model_->config.moe.experts > 0 && model_->is_training()) {
    const auto [dropped, routed] = model_->dropped_tokens();
    dropped_ += dropped;
    routed_ += routed;
    last_ = {dropped, routed};
  }
  return loss;
}

void LlamaLmCase::micro_batch_replayed() {
  // The graph's forward is the captured one's, routing included (a captured step reads nothing back
  // to the host, so its counts cannot change).
  dropped_ += last_.first;
  routed_ += last_.second;
}

void LlamaLmCase::step_counters(std::map<std::string, double>& counters) {
  if (model_->config.moe.experts == 0) return;
  counters["moe_routed_pairs"] = static_cast<double>(routed_);
  counters["moe_dropped_pairs"] = static_cast<double>(dropped_);
  counters["moe_dropped_share"] = routed_ > 0 ? static_cast<double>(dropped_) / static_cast<double>(routed_) : 0.0;
  dropped_ = routed_ = 0;
}

}  // namespace xpuperf::train
