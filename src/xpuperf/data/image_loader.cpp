#include "xpuperf/data/image_loader.h"

#include <algorithm>
#include <random>
#include <tuple>

#include "xpuperf/core/log.h"
#include "xpuperf/data/data_error.h"
#include "xpuperf/data/image_transforms.h"
#include "xpuperf/data/jpeg.h"
#include "xpuperf/data/shard_sampler.h"

namespace xpuperf::data {

namespace {
// libjpeg-turbo handles are not thread-safe: one a loader thread.
JpegCodec& thread_codec() {
  thread_local JpegCodec codec;
  return codec;
}
}  // namespace

ImageFolderLoader::ImageFolderLoader(ImageFolder folder, ImageLoaderOptions options)
    : folder_(std::move(folder)), o_(options) {
  if (o_.batch_size <= 0) throw DataError("image loader: batch size must be positive");
  if (o_.threads <= 0) o_.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o_.batches_ahead = std::max(o_.batches_ahead, o_.threads);
  if (o_.device_decoder) {
    for (int t = 0; t < o_.threads; ++t)
      decoders_.push_back(o_.device_decoder->make_decoder(o_.decode_device, o_.image_size, true));
    // Enough for every batch made or waiting, and the one being copied out.
    const auto bytes = static_cast<std::size_t>(o_.batch_size) * static_cast<std::size_t>(o_.image_size) *
                       static_cast<std::size_t>(o_.image_size) * 3;
    device_buffers_ = o_.device_decoder->make_buffers(o_.decode_device, bytes, o_.batches_ahead + 2);
  }
}

ImageFolderLoader::~ImageFolderLoader() {
  stop_workers();
  if (device_buffers_)
    for (auto& [number, batch] : ready_) release(batch, nullptr);
}

std::string ImageFolderLoader::decoder() const {
  const std::string threads = std::to_string(o_.threads) + (o_.threads == 1 ? " thread" : " threads");
  if (decoders_.empty()) return "libjpeg-turbo, " + threads;
  return decoders_.front()->backend() + " on " + o_.device_decoder->device_type + ":" +
         std::to_string(o_.decode_device) + ", " + threads + " reading files";
}

void ImageFolderLoader::release(const ImageBatch& batch, void* stream) {
  if (device_buffers_ && batch.device_buffer >= 0) device_buffers_->release(batch.device_buffer, stream);
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
    for (auto& [number, batch] : ready_) release(batch, nullptr);
    ready_.clear();
    failure_ = nullptr;
    stopping_ = false;
  }
  for (int t = 0; t < o_.threads; ++t) workers_.emplace_back([this, t] { work(t); });
}

void ImageFolderLoader::work(int worker) {
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
      ImageBatch batch = decoders_.empty() ? make_batch(number)
                                           : make_device_batch(number, *decoders_[static_cast<std::size_t>(worker)]);
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
  JpegCodec& codec = thread_codec();
  codec.set_max_pixels(o_.max_image_pixels);
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
      if (read_file_bytes(item.path, bytes, error) && codec.decode(bytes.data(), bytes.size(), image, error)) {
        const auto [box, flip] = choose_crop(image.width, image.height, order_[static_cast<std::size_t>(at)]);
        resize_crop(image, box, o_.image_size, o_.image_size, flip,
                    batch.pixels.data() + image_bytes * static_cast<std::size_t>(i));
        batch.labels[static_cast<std::size_t>(i)] = item.label;
        break;
      }
      skip(item.path, error);
      if (++tries >= n) throw DataError("no image of " + folder_.dir + " decodes");
    }
  }
  return batch;
}

std::pair<CropBox, bool> ImageFolderLoader::choose_crop(int width, int height, std::int64_t sample) const {
  // The same crop for the same seed, epoch and sample, whichever thread or decoder makes it.
  std::mt19937_64 rng(o_.seed * 1000003u + static_cast<std::uint64_t>(epoch_) * 7919u +
                      static_cast<std::uint64_t>(sample));
  const CropBox box = o_.train ? random_resized_crop_box(width, height, rng)
                               : center_crop_box(width, height, o_.resize_to, o_.image_size);
  const bool flip = o_.train && std::uniform_int_distribution<int>(0, 1)(rng) == 1;
  return {box, flip};
}

void ImageFolderLoader::skip(const std::string& path, const std::string& error) {
  bool first_time = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    first_time = skipped_.insert(path).second;
  }
  if (first_time) log::warning("skipping " + path + ": " + error + " (counted in the run's skipped files)");
}

namespace {

// A file cut short has no end-of-image marker; a device decoder may not say so, libjpeg-turbo does.
bool ends_with_eoi(const std::vector<std::uint8_t>& bytes) {
  const std::size_t from = bytes.size() > 64 ? bytes.size() - 64 : 0;
  for (std::size_t i = bytes.size(); i-- > from + 1;)
    if (bytes[i - 1] == 0xFF && bytes[i] == 0xD9) return true;
  return false;
}

}  // namespace

class ImageFolderLoader::DeviceBatchFill {
 public:
  DeviceBatchFill(ImageFolderLoader& loader, DeviceJpegDecoder& decoder, ImageBatch& batch, std::size_t count)
      : l_(loader),
        decoder_(decoder),
        codec_(thread_codec()),
        batch_(batch),
        n_(static_cast<std::int64_t>(loader.order_.size())),
        image_bytes_(static_cast<std::size_t>(loader.o_.image_size) * static_cast<std::size_t>(loader.o_.image_size) *
                     3),
        files_(count),
        host_crops_(count),
        sample_at_(count) {
    codec_.set_max_pixels(l_.o_.max_image_pixels);
  }

  // Fills position i from sample `at` on (the next ones where files do not decode); queues it for
  // the device when it may, else decodes it here.
  void place(std::size_t i, std::int64_t at, bool device_allowed) {
    for (;; at = (at + 1) % n_) {
      const std::int64_t sample = l_.order_[static_cast<std::size_t>(at)];
      const auto& item = l_.folder_.images[static_cast<std::size_t>(sample)];
      batch_.labels[i] = item.label;
      sample_at_[i] = at;
      if (read_file_bytes(item.path, files_[i], error_)) {
        DeviceJpegShape shape;
        bool batchable = false;
        const bool probed = device_allowed && ends_with_eoi(files_[i]) &&
                            decoder_.probe(files_[i].data(), files_[i].size(), shape, batchable, error_);
        if (probed && !within_pixel_limit(shape.width, shape.height, l_.o_.max_image_pixels, error_)) {
          skip_one(item.path);
          continue;
        }
        if (probed && batchable) {
          queue(i, shape, sample);
          return;
        }
        if (decode_on_cpu(i, sample)) return;
      }
      skip_one(item.path);
    }
  }

  // The queued crops in one call; where a corrupt body fails it, one at a time, and the CPU for
  // what the device refuses.
  void decode_queued() {
    if (decoder_.decode_crops(jobs_, outs_, error_)) {
      l_.device_decoded_ += static_cast<std::int64_t>(jobs_.size());
      return;
    }
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      if (decoder_.decode_crops({jobs_[j]}, {outs_[j]}, error_)) {
        ++l_.device_decoded_;
        continue;
      }
      const std::size_t i = job_position_[j];
      const std::int64_t at = sample_at_[i];
      if (decode_on_cpu(i, l_.order_[static_cast<std::size_t>(at)])) continue;
      l_.skip(l_.folder_.images[static_cast<std::size_t>(l_.order_[static_cast<std::size_t>(at)])].path, error_);
      place(i, (at + 1) % n_, false);
    }
  }

 private:
  std::uint8_t* out(std::size_t i) const { return batch_.device_pixels + image_bytes_ * i; }

  void queue(std::size_t i, const DeviceJpegShape& shape, std::int64_t sample) {
    DeviceCropJob job;
    job.data = files_[i].data();
    job.size = files_[i].size();
    job.shape = shape;
    std::tie(job.box, job.flip) = l_.choose_crop(shape.width, shape.height, sample);
    jobs_.push_back(job);
    outs_.push_back(out(i));
    job_position_.push_back(i);
  }

  // The CPU's way with files_[i]: false when it does not decode.
  bool decode_on_cpu(std::size_t i, std::int64_t sample) {
    if (!codec_.decode(files_[i].data(), files_[i].size(), image_, error_)) return false;
    const auto [box, flip] = l_.choose_crop(image_.width, image_.height, sample);
    host_crops_[i].resize(image_bytes_);
    resize_crop(image_, box, l_.o_.image_size, l_.o_.image_size, flip, host_crops_[i].data());
    decoder_.upload(host_crops_[i].data(), out(i));
    ++l_.cpu_fallbacks_;
    return true;
  }

  void skip_one(const std::string& path) {
    l_.skip(path, error_);
    if (++tries_ >= n_) throw DataError("no image of " + l_.folder_.dir + " decodes");
  }

  ImageFolderLoader& l_;
  DeviceJpegDecoder& decoder_;
  JpegCodec& codec_;
  ImageBatch& batch_;
  const std::int64_t n_;
  const std::size_t image_bytes_;
  std::vector<std::vector<std::uint8_t>> files_;
  std::vector<std::vector<std::uint8_t>> host_crops_;  // CPU-decoded ones, until uploaded
  std::vector<std::int64_t> sample_at_;
  std::vector<DeviceCropJob> jobs_;
  std::vector<std::uint8_t*> outs_;
  std::vector<std::size_t> job_position_;
  RgbImage image_;
  std::string error_;
  std::int64_t tries_ = 0;
};

ImageBatch ImageFolderLoader::make_device_batch(std::int64_t number, DeviceJpegDecoder& decoder) {
  const std::int64_t first = number * o_.batch_size;
  const auto count =
      static_cast<std::size_t>(std::min<std::int64_t>(o_.batch_size, static_cast<std::int64_t>(order_.size()) - first));
  ImageBatch batch;
  batch.size = static_cast<std::int64_t>(count);
  batch.height = batch.width = o_.image_size;
  batch.labels.resize(count);
  batch.device_buffer = device_buffers_->acquire();
  batch.device_pixels = device_buffers_->data(batch.device_buffer);
  try {
    DeviceBatchFill fill(*this, decoder, batch, count);
    for (std::size_t i = 0; i < count; ++i) fill.place(i, first + static_cast<std::int64_t>(i), true);
    fill.decode_queued();
    decoder.synchronize();  // the uploads of CPU-decoded crops
  } catch (...) {
    device_buffers_->release(batch.device_buffer, nullptr);
    throw;
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
