#include "xpuperf/data/image_loader.h"

#include <algorithm>
#include <random>

#include "xpuperf/core/log.h"
#include "xpuperf/data/idx.h"
#include "xpuperf/data/image_transforms.h"
#include "xpuperf/data/jpeg.h"
#include "xpuperf/data/shard_sampler.h"

namespace xpuperf::data {

ImageFolderLoader::ImageFolderLoader(ImageFolder folder, ImageLoaderOptions options)
    : folder_(std::move(folder)), o_(options) {
  if (o_.batch_size <= 0) throw DataError("image loader: batch size must be positive");
  if (o_.threads <= 0) o_.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o_.batches_ahead = std::max(o_.batches_ahead, o_.threads);
}

ImageFolderLoader::~ImageFolderLoader() {
  stop_workers();
}

void ImageFolderLoader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

std::int64_t ImageFolderLoader::batches_in_epoch() const {
  return batches_;
}

std::set<std::string> ImageFolderLoader::skipped_files() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return skipped_;
}

void ImageFolderLoader::start_epoch(std::int64_t epoch) {
  stop_workers();
  const ShardSpec spec{
      static_cast<std::int64_t>(folder_.images.size()), o_.rank, o_.world_size, o_.train, o_.seed, o_.train};
  order_ = shard_indices(spec, epoch);
  epoch_ = epoch;
  const auto n = static_cast<std::int64_t>(order_.size());
  batches_ = o_.train ? n / o_.batch_size : (n + o_.batch_size - 1) / o_.batch_size;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    next_to_make_ = next_to_give_ = 0;
    ready_.clear();
    failure_ = nullptr;
    stopping_ = false;
  }
  for (int t = 0; t < o_.threads; ++t) workers_.emplace_back([this] { work(); });
}

void ImageFolderLoader::work() {
  for (;;) {
    std::int64_t number = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] {
        return stopping_ || next_to_make_ >= batches_ || next_to_make_ < next_to_give_ + o_.batches_ahead;
      });
      if (stopping_ || next_to_make_ >= batches_) return;
      number = next_to_make_++;
    }
    try {
      ImageBatch batch = make_batch(number);
      std::lock_guard<std::mutex> lock(mutex_);
      ready_.emplace(number, std::move(batch));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!failure_) failure_ = std::current_exception();
    }
    changed_.notify_all();
  }
}

ImageBatch ImageFolderLoader::make_batch(std::int64_t number) {
  thread_local std::unique_ptr<JpegCodec> codec;
  if (!codec) codec = std::make_unique<JpegCodec>();
  const std::int64_t first = number * o_.batch_size;
  const std::int64_t count = std::min<std::int64_t>(o_.batch_size, static_cast<std::int64_t>(order_.size()) - first);
  ImageBatch batch;
  batch.size = count;
  batch.height = batch.width = o_.image_size;
  const std::size_t image_bytes = static_cast<std::size_t>(o_.image_size) * static_cast<std::size_t>(o_.image_size) * 3;
  batch.pixels.resize(image_bytes * static_cast<std::size_t>(count));
  batch.labels.resize(static_cast<std::size_t>(count));
  std::vector<std::uint8_t> bytes;
  RgbImage image;
  std::string error;
  const auto n = static_cast<std::int64_t>(order_.size());
  for (std::int64_t i = 0; i < count; ++i) {
    // A file that does not decode gives way to the next sample of the epoch.
    std::int64_t at = first + i, tries = 0;
    for (;; at = (at + 1) % n) {
      const auto& item = folder_.images[static_cast<std::size_t>(order_[static_cast<std::size_t>(at)])];
      if (read_file_bytes(item.path, bytes, error) && codec->decode(bytes.data(), bytes.size(), image, error)) {
        // The same crop for the same seed, epoch and sample, whichever thread makes it.
        std::mt19937_64 rng(o_.seed * 1000003u + static_cast<std::uint64_t>(epoch_) * 7919u +
                            static_cast<std::uint64_t>(order_[static_cast<std::size_t>(at)]));
        const CropBox box = o_.train ? random_resized_crop_box(image.width, image.height, rng)
                                     : center_crop_box(image.width, image.height, o_.resize_to, o_.image_size);
        const bool flip = o_.train && std::uniform_int_distribution<int>(0, 1)(rng) == 1;
        resize_crop(image, box, o_.image_size, o_.image_size, flip,
                    batch.pixels.data() + image_bytes * static_cast<std::size_t>(i));
        batch.labels[static_cast<std::size_t>(i)] = item.label;
        break;
      }
      bool first_time = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        first_time = skipped_.insert(item.path).second;
      }
      if (first_time) log::warning("skipping " + item.path + ": " + error + " (counted in the run's skipped files)");
      if (++tries >= n) throw DataError("no image of " + folder_.dir + " decodes");
    }
  }
  return batch;
}

std::optional<ImageBatch> ImageFolderLoader::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (next_to_give_ >= batches_) return std::nullopt;
  changed_.wait(lock, [&] { return failure_ || ready_.count(next_to_give_) > 0; });
  if (failure_) std::rethrow_exception(failure_);
  auto node = ready_.extract(next_to_give_++);
  lock.unlock();
  changed_.notify_all();
  return std::move(node.mapped());
}

}  // namespace xpuperf::data
