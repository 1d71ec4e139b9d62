#include "xpuperf/data/image_transforms.h"

#include <algorithm>
#include <cmath>

namespace xpuperf::data {

CropBox random_resized_crop_box(int width, int height, std::mt19937_64& rng, double scale_min, double scale_max,
                                double ratio_min, double ratio_max) {
  const double area = static_cast<double>(width) * height;
  std::uniform_real_distribution<double> scale(scale_min, scale_max);
  std::uniform_real_distribution<double> log_ratio(std::log(ratio_min), std::log(ratio_max));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * scale(rng), ratio = std::exp(log_ratio(rng));
    const int w = static_cast<int>(std::lround(std::sqrt(target * ratio)));
    const int h = static_cast<int>(std::lround(std::sqrt(target / ratio)));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      std::uniform_int_distribution<int> x(0, width - w), y(0, height - h);
      return {x(rng), y(rng), w, h};
    }
  }
  // Fallback: the whole image's centre at a ratio within the bounds.
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < ratio_min)
    h = static_cast<int>(std::lround(width / ratio_min));
  else if (in_ratio > ratio_max)
    w = static_cast<int>(std::lround(height * ratio_max));
  return {(width - w) / 2, (height - h) / 2, w, h};
}

CropBox center_crop_box(int width, int height, int resize_to, int crop) {
  const double scale = static_cast<double>(resize_to) / std::min(width, height);  // original pixels a resized one
  const int w = std::min(width, static_cast<int>(std::lround(crop / scale)));
  const int h = std::min(height, static_cast<int>(std::lround(crop / scale)));
  return {(width - w) / 2, (height - h) / 2, w, h};
}

void resize_crop(const RgbImage& src, const CropBox& box, int out_width, int out_height, bool flip, std::uint8_t* dst) {
  const double sx = static_cast<double>(box.width) / out_width, sy = static_cast<double>(box.height) / out_height;
  const auto row_stride = static_cast<std::size_t>(src.width) * 3;
  for (int y = 0; y < out_height; ++y) {
    const double fy = std::clamp(box.y + (y + 0.5) * sy - 0.5, 0.0, src.height - 1.0);
    const int y0 = static_cast<int>(fy), y1 = std::min(y0 + 1, src.height - 1);
    const double wy = fy - y0;
    const std::uint8_t* r0 = src.pixels.data() + static_cast<std::size_t>(y0) * row_stride;
    const std::uint8_t* r1 = src.pixels.data() + static_cast<std::size_t>(y1) * row_stride;
    for (int x = 0; x < out_width; ++x) {
      const double fx = std::clamp(box.x + (x + 0.5) * sx - 0.5, 0.0, src.width - 1.0);
      const int x0 = static_cast<int>(fx), x1 = std::min(x0 + 1, src.width - 1);
      const double wx = fx - x0;
      std::uint8_t* out =
          dst +
          (static_cast<std::size_t>(y) * static_cast<std::size_t>(out_width) + (flip ? out_width - 1 - x : x)) * 3;
      for (int c = 0; c < 3; ++c) {
        const double v = (1 - wy) * ((1 - wx) * r0[x0 * 3 + c] + wx * r0[x1 * 3 + c]) +
                         wy * ((1 - wx) * r1[x0 * 3 + c] + wx * r1[x1 * 3 + c]);
        out[c] = static_cast<std::uint8_t>(std::lround(std::clamp(v, 0.0, 255.0)));
      }
    }
  }
}

}  // namespace xpuperf::data
