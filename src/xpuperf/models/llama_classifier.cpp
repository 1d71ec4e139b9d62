#include "xpuperf/models/llama_classifier.h"

#include "xpuperf/torchrt/init.h"

namespace xpuperf::models {

LlamaForSequenceClassificationImpl::LlamaForSequenceClassificationImpl(const LlamaConfig& c, std::int64_t n)
    : config(c), label_count(n) {
  TORCH_CHECK(n >= 2, "Llama classifier: ", n, " labels; a classification needs 2 or more");
  model = register_module("model", LlamaModel(c));
  score = register_module("score", torchrt::normal_linear(c.hidden, n, /*bias=*/false, 0.02));  // HF's range
}

torch::Tensor LlamaForSequenceClassificationImpl::forward(const torch::Tensor& ids, const torch::Tensor& keep) {
  const auto hidden = model->forward(ids, nullptr);
  // Right padding: a row's last real token is at (its real tokens − 1), as Hugging Face finds it
  // from the first pad token.
  const auto last = keep.to(torch::kLong).sum(1).sub(1).clamp_min(0);
  const auto rows = torch::arange(ids.size(0), last.options());
  return score(hidden.index({rows, last}));
}

std::pair<torch::Tensor, torch::Tensor> LlamaForSequenceClassificationImpl::loss_and_correct(
    const torch::Tensor& ids, const torch::Tensor& keep, const torch::Tensor& labels) {
  const auto logits = forward(ids, keep);
  const auto loss = torch::nn::functional::cross_entropy(logits.to(torch::kFloat), labels);
  return {loss, logits.argmax(-1).eq(labels).sum()};
}

double LlamaForSequenceClassificationImpl::training_flops_per_sequence(std::int64_t tokens) const {
  return 3 * config.forward_flops(tokens, 0) + 6 * static_cast<double>(config.hidden * label_count);
}

}  // namespace xpuperf::models
