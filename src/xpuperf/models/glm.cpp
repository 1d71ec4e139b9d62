#include "xpuperf/models/glm.h"

#include "xpuperf/models/vocabulary_output.h"

namespace xpuperf::models {

GptConfig GlmConfig::decoder() const {
  GptConfig c{vocab, positions + 1, layers, hidden, heads, dropout, 1e-5};  // GLM's tables: a row more
  c.block_positions = true;
  return c;
}

GlmConfig glm_config_from(const Config& cfg, GlmConfig c) {
  return decoder_sizes_from(
      cfg, c, {"vocab_size", "max_position_embeddings", "num_layers", "hidden_size", "num_attention_heads"}, "GLM");
}

torch::Tensor glm_attention_mask(const torch::Tensor& sep, std::int64_t tokens) {
  const auto index = torch::arange(tokens, sep.options());
  const auto causal = index.unsqueeze(1).ge(index.unsqueeze(0));            // (tokens, tokens): j ≤ i
  const auto part_a = index.view({1, 1, tokens}).lt(sep.view({-1, 1, 1}));  // (batch, 1, tokens): j < sep
  return causal.unsqueeze(0).logical_or(part_a).unsqueeze(1);
}

bool convert_glm_names(std::map<std::string, torch::Tensor>& tensors) {
  const auto has = [&](const std::string& name) { return tensors.count(name) || tensors.count("module." + name); };
  if (!has("word_embeddings.weight") || !has("transformer.block_position_embeddings.weight")) return false;
  std::map<std::string, torch::Tensor> renamed;
  for (auto& [original, tensor] : tensors) {
    std::string name = original.rfind("module.", 0) == 0 ? original.substr(7) : original;
    if (name == "transformer.position_embeddings.weight") name = "position_embeddings.weight";
    if (name == "transformer.block_position_embeddings.weight") name = "transformer.wbpe.weight";
    renamed[name] = tensor;
  }
  tensors = std::move(renamed);
  return convert_megatron_gpt_names(tensors);  // the rest is Megatron-LM's GPT-2
}

GlmModelImpl::GlmModelImpl(const GlmConfig& c) : config(c) {
  transformer = register_module("transformer", GptModel(c.decoder()));
}

torch::Tensor GlmModelImpl::hidden(const GlmInputs& in) {
  TORCH_CHECK(in.ids.size(1) <= config.positions, "GLM: ", in.ids.size(1), " tokens, more than its ", config.positions,
              " positions");
  GptExtraInputs extra{in.positions, in.block_positions, glm_attention_mask(in.sep, in.ids.size(1))};
  auto h = transformer->forward(in.ids, fused_kernels, &extra);
  return in.targets_from > 0 ? h.narrow(1, in.targets_from, h.size(1) - in.targets_from) : h;
}

torch::Tensor GlmModelImpl::forward(const GlmInputs& in) {
  return torch::nn::functional::linear(hidden(in), transformer->wte->weight);
}

torch::Tensor GlmModelImpl::loss(const GlmInputs& in) {
  const auto h = hidden(in);
  const auto logits = vocabulary_logits(h, transformer->wte->weight, {}, h.is_cuda());
  const auto targets = in.targets.narrow(1, in.targets_from, in.targets.size(1) - in.targets_from);
  return token_cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}), fused_kernels);
}

torch::Tensor GlmModelImpl::target_log_probs(const GlmInputs& in) {
  const auto h = hidden(in);
  const auto logits = vocabulary_logits(h, transformer->wte->weight, {}, h.is_cuda()).to(torch::kFloat);
  const auto targets = in.targets.narrow(1, in.targets_from, in.targets.size(1) - in.targets_from);
  const auto counted = targets.ge(0);
  const auto picked = logits.log_softmax(-1).gather(-1, targets.clamp_min(0).unsqueeze(-1)).squeeze(-1);
  return picked.masked_fill(counted.logical_not(), 0).sum(1);
}

double GlmModelImpl::training_flops_per_token(std::int64_t tokens) const {
  const auto h = static_cast<double>(config.hidden), l = static_cast<double>(config.layers);
  const double per_layer = 12 * h * h + 13 * h;  // the linears and norms of a block
  return 6 * (l * per_layer + 2 * h) + 12 * l * h * static_cast<double>(tokens);
}

}  // namespace xpuperf::models
