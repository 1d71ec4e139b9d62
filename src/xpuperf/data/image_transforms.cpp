#include "xpuperf/data/image_transforms.h"

#include <algorithm>
#include <cmath>
#include <vector>

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

namespace {

// One output coordinate's two source taps and the second tap's weight out of 256.
struct Tap {
  int first, second, weight;
};

// Bilinear taps along one axis, half-pixel centres as torchvision's (align_corners=False).
std::vector<Tap> taps(int start, int extent, int out, int limit) {
  std::vector<Tap> t(static_cast<std::size_t>(out));
  const double scale = static_cast<double>(extent) / out;
  for (int i = 0; i < out; ++i) {
    const double f = std::clamp(start + (i + 0.5) * scale - 0.5, 0.0, limit - 1.0);
    const int a = static_cast<int>(f);
    t[static_cast<std::size_t>(i)] = {a, std::min(a + 1, limit - 1), static_cast<int>(std::lround((f - a) * 256))};
  }
  return t;
}

}  // namespace

void resize_crop(const RgbImage& src, const CropBox& box, int out_width, int out_height, bool flip, std::uint8_t* dst) {
  // Fixed point with 8-bit weights: the same result as the exact interpolation to within one
  // level, at a fraction of its cost (this runs for every image of every batch).
  const auto columns = taps(box.x, box.width, out_width, src.width);
  const auto rows = taps(box.y, box.height, out_height, src.height);
  const auto row_stride = static_cast<std::size_t>(src.width) * 3;
  for (int y = 0; y < out_height; ++y) {
    const Tap& ty = rows[static_cast<std::size_t>(y)];
    const std::uint8_t* r0 = src.pixels.data() + static_cast<std::size_t>(ty.first) * row_stride;
    const std::uint8_t* r1 = src.pixels.data() + static_cast<std::size_t>(ty.second) * row_stride;
    const int wy = ty.weight;
    std::uint8_t* line = dst + static_cast<std::size_t>(y) * static_cast<std::size_t>(out_width) * 3;
    for (int x = 0; x < out_width; ++x) {
      const Tap& tx = columns[static_cast<std::size_t>(x)];
      const int a = tx.first * 3, b = tx.second * 3, wx = tx.weight;
      std::uint8_t* out = line + static_cast<std::size_t>(flip ? out_width - 1 - x : x) * 3;
      for (int c = 0; c < 3; ++c) {
        const int top = r0[a + c] * (256 - wx) + r0[b + c] * wx;
        const int bottom = r1[a + c] * (256 - wx) + r1[b + c] * wx;
        out[c] = static_cast<std::uint8_t>((top * (256 - wy) + bottom * wy + (1 << 15)) >> 16);
      }
    }
  }
}

}  // namespace xpuperf::data
