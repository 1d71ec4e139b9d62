#include "xpuperf/models/bert_classifier.h"

#include "xpuperf/torchrt/init.h"

namespace xpuperf::models {

BertForSequenceClassificationImpl::BertForSequenceClassificationImpl(const BertConfig& c, std::int64_t n)
    : config(c), label_count(n) {
  TORCH_CHECK(n >= 2, "BERT classifier: ", n, " labels; a classification needs 2 or more");
  bert = register_module("bert", BertModel(c, /*pooler=*/true));
  dropout = register_module("dropout", torch::nn::Dropout(c.dropout));
  classifier = register_module("classifier", torchrt::normal_linear(c.hidden, n, /*bias=*/true, 0.02));  // HF's range
}

torch::Tensor BertForSequenceClassificationImpl::forward(const torch::Tensor& ids, const torch::Tensor& types,
                                                         const torch::Tensor& keep) {
  return classifier(dropout(bert->pool(bert(ids, types, keep))));
}

std::pair<torch::Tensor, torch::Tensor> BertForSequenceClassificationImpl::loss_and_correct(
    const torch::Tensor& ids, const torch::Tensor& types, const torch::Tensor& keep, const torch::Tensor& labels) {
  const auto logits = forward(ids, types, keep);
  const auto loss = torch::nn::functional::cross_entropy(logits.to(torch::kFloat), labels);
  const auto correct = logits.argmax(-1).eq(labels).sum();
  return {loss, correct};
}

double BertForSequenceClassificationImpl::training_flops_per_sequence(std::int64_t tokens) const {
  const auto h = static_cast<double>(config.hidden), l = static_cast<double>(config.layers),
             t = static_cast<double>(tokens);
  const double encoder = l * (4 * h * h + 2 * h * static_cast<double>(config.intermediate));
  return t * (6 * encoder + 12 * l * h * t) + 6 * (h * h + h * static_cast<double>(label_count));
}

}  // namespace xpuperf::models
