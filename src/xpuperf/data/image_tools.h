#pragma once
// The data tool's work (`xpuperf data`), torch-free: an ImageNet-layout JPEG folder written from
// Fashion-MNIST (what a Debian machine has) so tests have real JPEGs to decode, and the check of
// an image folder before a long run (classes, images per class, files that do not decode).

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace xpuperf::data {

// Called from the calling thread with (done, total) while the work goes on.
using ProgressFn = std::function<void(std::size_t done, std::size_t total)>;

struct FashionJpegOptions {
  std::string idx_dir;                                  // the IDX files (Debian: /usr/share/datasets/fashion-mnist)
  std::string out_dir;                                  // gets train/<class>/*.JPEG and val/<class>/*.JPEG
  int size = 64;                                        // the 28×28 images upscaled (bilinear) to size × size RGB
  std::int64_t train_per_class = 0, val_per_class = 0;  // 0: every image of the split
  int quality = 90;
  int threads = 0;  // 0: the machine's cores
};

struct FashionJpegResult {
  std::int64_t train_images = 0, val_images = 0;
  std::uint64_t bytes = 0;
};

// Class folders are "0_tshirt_top" … "9_ankle_boot" (sorted as the labels). Throws DataError
// naming the file when the IDX files are missing or bad, or the folder cannot be written.
FashionJpegResult write_fashion_mnist_jpeg(const FashionJpegOptions& options, const ProgressFn& progress);

struct PhotoCropOptions {
  std::vector<std::string> sources;  // JPEG photographs, or folders searched for them (.jpg, .jpeg)
  std::string out_dir;               // gets train/<class>/*.JPEG and val/<class>/*.JPEG
  int classes = 100;
  std::int64_t train_per_class = 100, val_per_class = 10;
  int quality = 98;  // wallpapers are smoother than ImageNet's photos: 98 gives its ~110 KB a file
  std::uint64_t seed = 1;
  int threads = 0;  // 0: the machine's cores
};

struct PhotoCropResult {
  std::int64_t train_images = 0, val_images = 0, sources = 0;
  std::uint64_t bytes = 0;
  double mean_width = 0, mean_height = 0;
};

// An ImageNet-layout folder whose files look like ImageNet's to a decoder: each image is a random
// window of a random source photograph, resized to one of ImageNet's common sizes (500x375,
// 500x333, 375x500, ...) and JPEG-encoded at `quality`. Classes are assigned in turn, so the
// folder is for throughput and decode timing, never accuracy. Throws DataError naming the file or
// folder when a source is missing or does not decode, or the folder cannot be written.
PhotoCropResult write_photo_crops(const PhotoCropOptions& options, const ProgressFn& progress);

// Bilinear resize of a single-channel image to an RGB one of size × size (grey in every channel).
std::vector<std::uint8_t> grey_to_rgb_resized(const std::uint8_t* grey, int width, int height, int size);

struct FolderCheck {
  std::string dir;
  std::size_t classes = 0, images = 0;
  std::size_t min_per_class = 0, max_per_class = 0;
  std::string smallest_class;
  std::uint64_t bytes = 0;
  double mean_width = 0, mean_height = 0;                       // of the images that decoded
  std::vector<std::pair<std::string, std::string>> unreadable;  // path, why
};

// Lists the folder (list_image_folder's rules) and decodes every image with libjpeg-turbo on
// `threads` threads (0: the machine's cores); an image whose header claims more than
// `max_pixels` (<= 0: no limit) is listed as unreadable without being decoded.
FolderCheck check_image_folder(const std::string& dir, int threads, const ProgressFn& progress,
                               std::int64_t max_pixels);

}  // namespace xpuperf::data
