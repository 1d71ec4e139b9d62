#include "xpuperf/train/families/causal_lm_case.h"

#include <cmath>

#include "xpuperf/datasets/token_datasets.h"

namespace xpuperf::train {

Datasets CausalLmCase::token_datasets(const CaseContext& ctx, const std::string& tokenizer, std::int64_t vocab,
                                      std::int64_t default_length, std::int64_t positions,
                                      const std::string& positions_key) {
  length_ = ctx.config.get_int("seq_length", default_length);
  if (length_ < 1 || length_ > positions)
    throw ConfigError(ctx.config.at("seq_length").source.str() + ": seq_length must be in [1, " + positions_key +
                      " = " + std::to_string(positions) + "], got " + std::to_string(length_));
  auto corpus = datasets::open_token_corpus(ctx, tokenizer, vocab);
  const bool documents = ctx.switches.at("sequence_packing").get<bool>();
  return {std::make_shared<datasets::GptTokenDataset>(corpus.train, length_, documents),
          std::make_shared<datasets::GptTokenDataset>(corpus.eval, length_, documents)};
}

void CausalLmCase::evaluate(const Batch& batch, MetricSums& sums) {
  const auto tokens = static_cast<double>(batch[0].size(0) * (batch[0].size(1) - 1));
  sums.add("loss", lm_loss(batch[0], documents_of(batch)).item<double>() * tokens, tokens);
}

void CausalLmCase::derive_metrics(std::map<std::string, double>& metrics) const {
  if (metrics.count("loss")) metrics["perplexity"] = std::exp(metrics["loss"]);
}

double CausalLmCase::train_flops_per_sample() const {
  return training_flops_per_token(length_) * static_cast<double>(length_);
}

}  // namespace xpuperf::train
