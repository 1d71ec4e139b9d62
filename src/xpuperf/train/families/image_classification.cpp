#include "xpuperf/train/families/image_classification.h"

namespace xpuperf::train {
namespace F = torch::nn::functional;

namespace {
std::int64_t num_classes(const Config& cfg) {
  const std::int64_t classes = cfg.get_int("num_classes", 1000);
  if (classes < 2) throw ConfigError("num_classes must be 2 or more, got " + std::to_string(classes));
  return classes;
}
}  // namespace

Datasets ImageClassificationCase::datasets(const CaseContext& ctx) {
  label_smoothing_ = ctx.config.get_number("label_smoothing", 0.0);
  if (label_smoothing_ < 0 || label_smoothing_ >= 1)
    throw ConfigError("label_smoothing must be in [0, 1), got " + std::to_string(label_smoothing_));
  return datasets::image_classification_data(ctx, num_classes(ctx.config));
}

std::shared_ptr<torch::nn::Module> ImageClassificationCase::model(const CaseContext& ctx) {
  model_ = build(ctx.config, num_classes(ctx.config), ctx.config.get_int("image_size", 224));
  model_.module->to(ctx.device);
  normalize_ = datasets::ImageNormalizer(ctx.device);
  return model_.module;
}

torch::Tensor ImageClassificationCase::forward_step(const Batch& batch) {
  const auto logits = model_.forward(normalize_(batch[0]));
  return F::cross_entropy(logits, batch[1], F::CrossEntropyFuncOptions().label_smoothing(label_smoothing_));
}

void ImageClassificationCase::evaluate(const Batch& batch, MetricSums& sums) {
  const auto logits = model_.forward(normalize_(batch[0])).to(torch::kFloat);
  const auto& labels = batch[1];
  const auto n = static_cast<double>(labels.size(0));
  const auto top5 = std::get<1>(logits.topk(std::min<std::int64_t>(5, logits.size(1)), 1));
  const auto hits = top5.eq(labels.unsqueeze(1));
  sums.add("accuracy", hits.select(1, 0).sum().item<double>(), n);
  sums.add("top5", hits.any(1).sum().item<double>(), n);
  sums.add("loss", F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum)).item<double>(),
           n);
}

}  // namespace xpuperf::train
