#pragma once
// What the image classification cases (resnet50, vit, mobilenetv2) share: their data
// (image_dataset.h), the loss (cross-entropy with label smoothing), the metrics (top-1 as
// `accuracy`, `top5`, `loss`) and MFU's FLOPs. A case only builds its model.

#include <torch/torch.h>

#include <functional>
#include <memory>

#include "xpuperf/datasets/image_dataset.h"
#include "xpuperf/train/training_case.h"

namespace xpuperf::train {

class ImageClassificationCase : public TrainingCase {
 public:
  Datasets datasets(const CaseContext& ctx) override;
  std::shared_ptr<torch::nn::Module> model(const CaseContext& ctx) override;
  torch::Tensor forward_step(const Batch& batch) override;
  void evaluate(const Batch& batch, MetricSums& sums) override;
  double train_flops_per_sample() const override { return 3 * model_.forward_flops; }  // backward: twice the forward

 protected:
  struct Model {
    std::shared_ptr<torch::nn::Module> module;
    std::function<torch::Tensor(const torch::Tensor&)> forward;  // normalised images -> logits
    double forward_flops = 0;                                    // one image at image_size
  };
  // The model for `classes` outputs and `image_size` inputs (and what else the case reads from
  // `config`), on the CPU; the runtime moves it.
  virtual Model build(const Config& config, std::int64_t classes, std::int64_t image_size) = 0;

 private:
  Model model_;
  datasets::ImageNormalizer normalize_;
  double label_smoothing_ = 0;
};

}  // namespace xpuperf::train
