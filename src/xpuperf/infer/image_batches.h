#pragma once
// What the image-classification inference cases (resnet50, vit_l_16) read: ImageNet's validation
// set as a folder (<dir>/<wnid>/<image>) through torchvision's evaluation transform, or synthetic
// images labelled as such.

#include <cstdint>
#include <string>

#include "xpuperf/infer/inference_case.h"

namespace xpuperf::infer {

struct ImageTransform {
  int resize = 256;  // the shorter side, before the centre crop
  int crop = 224;
};

// The folder of config's data_dir (max_samples, num_workers: decoding threads a batch), for a model
// of `classes` classes; ConfigError naming `case_name` when data_dir is unset or the build has no
// OpenCV to decode it.
Batches image_folder_batches(const InferContext& ctx, const std::string& case_name, std::int64_t batch_size,
                             std::int64_t classes, const ImageTransform& transform);

// config's synthetic_samples random images (a few distinct batches, cycled) and random labels.
Batches synthetic_image_batches(const InferContext& ctx, std::int64_t batch_size, std::int64_t classes, int size);

}  // namespace xpuperf::infer
