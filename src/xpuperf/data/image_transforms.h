#pragma once
// torchvision's ImageNet transforms on decoded RGB images, torch-free: the training crop
// (RandomResizedCrop: a random area of 8–100 % at an aspect ratio of 3/4–4/3, resized; then a
// random horizontal flip) and the evaluation crop (Resize(256) then CenterCrop(224), as one crop
// box of the original). Output is height × width × 3 bytes (channels-last); normalising is the
// device's work.

#include <cstdint>
#include <random>

#include "xpuperf/data/jpeg.h"

namespace xpuperf::data {

struct CropBox {
  int x = 0, y = 0, width = 0, height = 0;
};

// torchvision's RandomResizedCrop.get_params: ten tries at a random scale and log-uniform ratio,
// else the centre crop at the nearest allowed ratio.
CropBox random_resized_crop_box(int width, int height, std::mt19937_64& rng, double scale_min = 0.08,
                                double scale_max = 1.0, double ratio_min = 3.0 / 4.0, double ratio_max = 4.0 / 3.0);

// Resize(resize_to) (the shorter side) then CenterCrop(crop), expressed in the original's pixels.
CropBox center_crop_box(int width, int height, int resize_to, int crop);

// The box of `src`, resized (bilinear, pixel centres as torchvision's antialias-free resize)
// to out_width × out_height, mirrored when `flip`, written to `dst` (out_height × out_width × 3).
void resize_crop(const RgbImage& src, const CropBox& box, int out_width, int out_height, bool flip, std::uint8_t* dst);

}  // namespace xpuperf::data
