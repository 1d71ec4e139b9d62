#include "xpuperf/data/image_tools.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "xpuperf/data/idx.h"
#include "xpuperf/data/image_folder.h"
#include "xpuperf/data/image_transforms.h"
#include "xpuperf/data/jpeg.h"

namespace xpuperf::data {
namespace fs = std::filesystem;

namespace {

const char* kFashionClasses[] = {"0_tshirt_top", "1_trouser", "2_pullover", "3_dress", "4_coat",
                                 "5_sandal",     "6_shirt",   "7_sneaker",  "8_bag",   "9_ankle_boot"};

int thread_count(int asked) {
  if (asked > 0) return asked;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Runs work(i, worker) for i in [0, n) on `threads` threads, each with its worker state; reports
// progress from the calling thread; rethrows the first exception a thread threw.
template <typename Worker, typename Work>
void parallel_for(std::size_t n, int threads, const ProgressFn& progress, Work work) {
  std::atomic<std::size_t> next{0}, done{0};
  std::atomic<bool> failed{false};
  std::exception_ptr failure;  // written once, under the mutex, read after the joins
  std::mutex failure_mutex;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      try {
        Worker worker;
        for (std::size_t i; (i = next.fetch_add(1)) < n; done.fetch_add(1)) work(i, worker);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = n;  // the others stop at their next item
        failed = true;
      }
    });
  while (done.load() < n && !failed.load()) {
    if (progress) progress(done.load(), n);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  if (progress) progress(n, n);
}

}  // namespace

std::vector<std::uint8_t> grey_to_rgb_resized(const std::uint8_t* grey, int width, int height, int size) {
  RgbImage rgb{width, height, {}};
  rgb.pixels.reserve(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
  for (int i = 0; i < width * height; ++i) rgb.pixels.insert(rgb.pixels.end(), 3, grey[i]);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(size) * static_cast<std::size_t>(size) * 3);
  resize_crop(rgb, {0, 0, width, height}, size, size, false, out.data());
  return out;
}

FashionJpegResult write_fashion_mnist_jpeg(const FashionJpegOptions& o, const ProgressFn& progress) {
  if (o.size < 8 || o.size > 4096) throw DataError("--size " + std::to_string(o.size) + ": choose 8 to 4096 pixels");
  if (o.quality < 1 || o.quality > 100) throw DataError("--quality " + std::to_string(o.quality) + ": choose 1 to 100");
  struct Item {
    const IdxImageSet* set;
    std::size_t index;
    std::string path;
  };
  const IdxImageSet train = read_idx_image_set(o.idx_dir, "train", 10);
  const IdxImageSet val = read_idx_image_set(o.idx_dir, "t10k", 10);
  std::vector<Item> items;
  FashionJpegResult result;
  for (const auto& [split, set, per_class, count] :
       {std::tuple<const char*, const IdxImageSet*, std::int64_t, std::int64_t*>{"train", &train, o.train_per_class,
                                                                                 &result.train_images},
        {"val", &val, o.val_per_class, &result.val_images}}) {
    std::int64_t taken[10] = {};
    for (std::size_t i = 0; i < set->labels.values.size(); ++i) {
      const int label = set->labels.values[i];
      if (per_class > 0 && taken[label] >= per_class) continue;
      ++taken[label];
      ++*count;
      const fs::path dir = fs::path(o.out_dir) / split / kFashionClasses[label];
      char name[32];
      std::snprintf(name, sizeof name, "%s_%05zu.JPEG", split, i);
      items.push_back({set, i, (dir / name).string()});
    }
    for (const char* c : kFashionClasses) {
      std::error_code ec;
      fs::create_directories(fs::path(o.out_dir) / split / c, ec);
      if (ec) throw DataError("cannot create " + (fs::path(o.out_dir) / split / c).string() + ": " + ec.message());
    }
  }
  std::atomic<std::uint64_t> bytes{0};
  parallel_for<JpegCodec>(items.size(), thread_count(o.threads), progress, [&](std::size_t i, JpegCodec& codec) {
    const Item& item = items[i];
    const auto rows = static_cast<int>(item.set->images.shape[1]), cols = static_cast<int>(item.set->images.shape[2]);
    const std::uint8_t* grey = item.set->images.values.data() + item.index * static_cast<std::size_t>(rows * cols);
    const RgbImage image{o.size, o.size, grey_to_rgb_resized(grey, cols, rows, o.size)};
    const auto jpeg = codec.encode(image, o.quality);
    std::ofstream out(item.path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
    if (!out) throw DataError("cannot write " + item.path);
    bytes += jpeg.size();
  });
  result.bytes = bytes;
  return result;
}

namespace {

std::vector<std::string> photo_files(const std::vector<std::string>& sources) {
  std::vector<std::string> files;
  auto is_jpeg = [](const fs::path& p) {
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    return ext == ".jpg" || ext == ".jpeg";
  };
  for (const auto& source : sources) {
    std::error_code ec;
    if (fs::is_directory(source, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(source, ec); !ec && it != fs::recursive_directory_iterator();
           it.increment(ec))
        if (it->is_regular_file() && is_jpeg(it->path())) found.push_back(it->path().string());
      if (found.empty()) throw DataError(source + " holds no .jpg or .jpeg file");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(source, ec)) {
      files.push_back(source);
    } else {
      throw DataError("photo source " + source + " does not exist");
    }
  }
  if (files.empty()) throw DataError("no photo sources given (e.g. --from /usr/share/wallpapers)");
  return files;
}

}  // namespace

namespace {

// The sources decoded, those of at least 1000x750 pixels kept: small ones (icons, previews) would
// only give blurry crops.
std::vector<RgbImage> usable_photos(const std::vector<std::string>& sources) {
  const auto files = photo_files(sources);
  std::vector<RgbImage> photos;
  JpegCodec codec;
  std::vector<std::uint8_t> bytes;
  std::string error;
  for (const auto& file : files) {
    RgbImage photo;
    if (!read_file_bytes(file, bytes, error) || !codec.decode(bytes.data(), bytes.size(), photo, error))
      throw DataError(file + ": " + error);
    if (photo.width >= 1000 && photo.height >= 750) photos.push_back(std::move(photo));
  }
  if (photos.empty()) throw DataError("no source photograph is at least 1000x750 pixels");
  return photos;
}

struct CropItem {
  std::string path;
  std::uint64_t number;  // seeds its crop
};

// Every image to write, class folders made: train's, then val's.
std::vector<CropItem> plan_crops(const PhotoCropOptions& o, PhotoCropResult& result) {
  std::vector<CropItem> items;
  std::uint64_t number = 0;
  for (const auto& [split, per_class, count] :
       {std::tuple<const char*, std::int64_t, std::int64_t*>{"train", o.train_per_class, &result.train_images},
        {"val", o.val_per_class, &result.val_images}}) {
    for (int c = 0; c < o.classes; ++c) {
      char klass[32];
      std::snprintf(klass, sizeof klass, "class_%05d", c);
      const fs::path dir = fs::path(o.out_dir) / split / klass;
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) throw DataError("cannot create " + dir.string() + ": " + ec.message());
      for (std::int64_t k = 0; k < per_class; ++k) {
        char name[48];
        std::snprintf(name, sizeof name, "%s_%05d_%06lld.JPEG", split, c, static_cast<long long>(k));
        items.push_back({(dir / name).string(), number++});
        ++*count;
      }
    }
  }
  return items;
}

// Item `number`'s image: one of ImageNet's most common sizes (landscape more often than portrait,
// as in its training set) cut from a window of a photograph covering 25 % to 100 % of it
// (downscaled: detail as dense as a camera's), flipped or not.
RgbImage photo_crop(const std::vector<RgbImage>& photos, std::uint64_t seed, std::uint64_t number) {
  static const int kSizes[][2] = {{500, 375}, {500, 375}, {500, 375}, {500, 333}, {500, 333},
                                  {375, 500}, {333, 500}, {500, 400}, {500, 500}, {640, 480}};
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + number);
  const RgbImage& photo = photos[std::uniform_int_distribution<std::size_t>(0, photos.size() - 1)(rng)];
  const auto& size = kSizes[std::uniform_int_distribution<int>(0, 9)(rng)];
  const double area = std::uniform_real_distribution<double>(0.25, 1.0)(rng) * photo.width * photo.height;
  const double aspect = static_cast<double>(size[0]) / size[1];
  int w = static_cast<int>(std::sqrt(area * aspect)), h = static_cast<int>(std::sqrt(area / aspect));
  w = std::clamp(w, 16, photo.width);
  h = std::clamp(h, 16, photo.height);
  const int x = std::uniform_int_distribution<int>(0, photo.width - w)(rng);
  const int y = std::uniform_int_distribution<int>(0, photo.height - h)(rng);
  const bool flip = std::uniform_int_distribution<int>(0, 1)(rng) == 1;
  RgbImage out{size[0], size[1], std::vector<std::uint8_t>(static_cast<std::size_t>(size[0]) * size[1] * 3)};
  resize_crop(photo, {x, y, w, h}, size[0], size[1], flip, out.pixels.data());
  return out;
}

}  // namespace

PhotoCropResult write_photo_crops(const PhotoCropOptions& o, const ProgressFn& progress) {
  if (o.classes < 1 || o.classes > 100000)
    throw DataError("--classes " + std::to_string(o.classes) + ": choose 1 to 100000");
  if (o.quality < 1 || o.quality > 100) throw DataError("--quality " + std::to_string(o.quality) + ": choose 1 to 100");
  if (o.train_per_class < 0 || o.val_per_class < 0) throw DataError("images per class cannot be negative");
  const std::vector<RgbImage> photos = usable_photos(o.sources);
  PhotoCropResult result;
  result.sources = static_cast<std::int64_t>(photos.size());
  const std::vector<CropItem> items = plan_crops(o, result);
  std::atomic<std::uint64_t> bytes{0}, widths{0}, heights{0};
  parallel_for<JpegCodec>(items.size(), thread_count(o.threads), progress, [&](std::size_t i, JpegCodec& codec) {
    const CropItem& item = items[i];
    const RgbImage out = photo_crop(photos, o.seed, item.number);
    const auto jpeg = codec.encode(out, o.quality);
    std::ofstream file(item.path, std::ios::binary);
    file.write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
    if (!file) throw DataError("cannot write " + item.path);
    bytes += jpeg.size();
    widths += static_cast<std::uint64_t>(out.width);
    heights += static_cast<std::uint64_t>(out.height);
  });
  const auto n = static_cast<double>(std::max<std::size_t>(1, items.size()));
  result.bytes = bytes;
  result.mean_width = static_cast<double>(widths) / n;
  result.mean_height = static_cast<double>(heights) / n;
  return result;
}

FolderCheck check_image_folder(const std::string& dir, int threads, const ProgressFn& progress,
                               std::int64_t max_pixels) {
  const ImageFolder folder = list_image_folder(dir);
  FolderCheck check;
  check.dir = dir;
  check.classes = folder.classes.size();
  check.images = folder.images.size();
  std::vector<std::size_t> per_class(folder.classes.size(), 0);
  for (const auto& image : folder.images) ++per_class[static_cast<std::size_t>(image.label)];
  const auto smallest = std::min_element(per_class.begin(), per_class.end());
  check.min_per_class = *smallest;
  check.max_per_class = *std::max_element(per_class.begin(), per_class.end());
  check.smallest_class = folder.classes[static_cast<std::size_t>(smallest - per_class.begin())];

  struct Worker {
    JpegCodec codec;
    std::vector<std::uint8_t> bytes;
    RgbImage image;
  };
  std::mutex mutex;
  std::uint64_t total_bytes = 0;
  double widths = 0, heights = 0;
  std::size_t decoded = 0;
  parallel_for<Worker>(folder.images.size(), thread_count(threads), progress, [&](std::size_t i, Worker& w) {
    const std::string& path = folder.images[i].path;
    w.codec.set_max_pixels(max_pixels);
    std::string error;
    const bool ok =
        read_file_bytes(path, w.bytes, error) && w.codec.decode(w.bytes.data(), w.bytes.size(), w.image, error);
    std::lock_guard<std::mutex> lock(mutex);
    total_bytes += w.bytes.size();
    if (!ok) {
      check.unreadable.emplace_back(path, error);
      return;
    }
    ++decoded;
    widths += w.image.width;
    heights += w.image.height;
  });
  std::sort(check.unreadable.begin(), check.unreadable.end());
  check.bytes = total_bytes;
  if (decoded > 0) {
    check.mean_width = widths / static_cast<double>(decoded);
    check.mean_height = heights / static_cast<double>(decoded);
  }
  return check;
}

}  // namespace xpuperf::data
