#include "xpuperf/train/families/text_classification.h"

namespace xpuperf::train {

Datasets TextClassificationCase::labelled_datasets(const CaseContext& ctx, const datasets::TextEncoder& encode,
                                                   const datasets::TextFraming& framing, std::int64_t default_length,
                                                   std::int64_t positions, const std::string& positions_key) {
  const Config& cfg = ctx.config;
  length_ = cfg.get_int("seq_length", default_length);
  const std::int64_t shortest = 1 + (framing.begin >= 0 ? 1 : 0) + (framing.end >= 0 ? 1 : 0);
  if (length_ < shortest || length_ > positions)
    throw ConfigError(cfg.at("seq_length").source.str() + ": seq_length must be in [" + std::to_string(shortest) +
                      ", " + positions_key + " = " + std::to_string(positions) + "], got " + std::to_string(length_));
  auto data = datasets::classification_data(datasets::data_file(cfg, "train_data"),
                                            datasets::data_file(cfg, "eval_data"), encode, framing, length_);
  labels_ = static_cast<std::int64_t>(data.label_names.size());
  return {data.train, data.eval};
}

void TextClassificationCase::evaluate(const Batch& batch, MetricSums& sums) {
  const auto [loss, correct] = loss_and_correct(batch);
  const auto n = static_cast<double>(batch[3].size(0));
  sums.add("accuracy", correct.item<double>(), n);
  sums.add("loss", loss.item<double>() * n, n);
}

}  // namespace xpuperf::train
