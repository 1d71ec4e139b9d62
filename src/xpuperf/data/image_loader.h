#pragma once
// Batches of an image folder for a vision case, ahead of the step: worker threads decode
// (libjpeg-turbo), crop, resize and flip each rank's share of the epoch into channels-last
// bytes, a few batches ahead. With a device's decoder (data/device_jpeg.h) the
// workers read the files and the device decodes and crops them into its memory; a file it does not
// take (progressive, CMYK) is decoded on the worker's CPU with the same crop. A file that does not decode is skipped —
// replaced by the next sample of the epoch, so batches keep their size — counted, and named in the log once; the run
// never dies of one file. Torch-free; the case copies a batch into (pinned) tensors.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "xpuperf/data/device_jpeg.h"
#include "xpuperf/data/image_folder.h"
#include "xpuperf/data/image_transforms.h"
#include "xpuperf/data/jpeg.h"

namespace xpuperf::data {

struct ImageLoaderOptions {
  int image_size = 224;  // the crop fed to the model
  int resize_to = 256;   // evaluation: the shorter side before the centre crop
  bool train = true;     // RandomResizedCrop + flip, padded equal shards; else the centre crop, every sample once
  std::int64_t batch_size = 256;
  int threads = 0;         // 0: the machine's cores
  int batches_ahead = 4;   // decoded before they are asked for (at least one a thread)
  std::uint64_t seed = 0;  // the shuffle and the crops: the same for the same seed and epoch
  int rank = 0, world_size = 1;
  // Not null: decode with this device decoder on device `decode_device` (its index), batches in its memory.
  const DeviceJpegBackend* device_decoder = nullptr;
  int decode_device = 0;
  std::int64_t max_image_pixels = kDefaultMaxImagePixels;  // larger images are skipped undecoded (<= 0: no limit)
};

struct ImageBatch {
  std::int64_t size = 0;
  int height = 0, width = 0;
  std::vector<std::uint8_t> pixels;  // size × height × width × 3 (empty when on the device)
  std::vector<std::int64_t> labels;
  std::uint8_t* device_pixels = nullptr;  // the same in device memory, with a device decoder
  int device_buffer = -1;                 // hand it back with ImageFolderLoader::release
};

class ImageFolderLoader {
 public:
  ImageFolderLoader(ImageFolder folder, ImageLoaderOptions options);
  ~ImageFolderLoader();
  ImageFolderLoader(const ImageFolderLoader&) = delete;
  ImageFolderLoader& operator=(const ImageFolderLoader&) = delete;

  // Starts an epoch (training drops the last partial batch, evaluation keeps it).
  void start_epoch(std::int64_t epoch);
  // The epoch's next batch, in order; nothing at its end. Rethrows a worker's error.
  std::optional<ImageBatch> next();
  // A device batch's memory goes back to the loader once the work queued on `stream` (the device
  // runtime's handle, null: its default stream) that reads it has run. Nothing for a CPU batch.
  void release(const ImageBatch& batch, void* stream);
  // "libjpeg-turbo" or the device decoder's backend, with the threads.
  std::string decoder() const;
  // The worker threads, each making whole batches.
  int threads() const { return o_.threads; }
  // Images the device decoded so far, and those a device loader left to the CPU (progressive, CMYK).
  std::int64_t device_decoded() const { return device_decoded_; }
  std::int64_t cpu_fallbacks() const { return cpu_fallbacks_; }

  std::int64_t batches_in_epoch() const;
  std::size_t images() const { return folder_.images.size(); }
  std::size_t classes() const { return folder_.classes.size(); }
  // Files that did not decode so far (each counted once), and their names.
  std::set<std::string> skipped_files() const;

 private:
  void stop_workers();
  void work(int worker);
  ImageBatch make_batch(std::int64_t number);
  ImageBatch make_device_batch(std::int64_t number, DeviceJpegDecoder& decoder);
  class DeviceBatchFill;  // one device batch's positions filled: on the device, or the CPU for the rest
  void skip(const std::string& path, const std::string& error);
  // The crop box and flip of a sample (of an image this size) in the current epoch.
  std::pair<CropBox, bool> choose_crop(int width, int height, std::int64_t sample) const;

  ImageFolder folder_;
  ImageLoaderOptions o_;
  std::vector<std::int64_t> order_;  // this rank's samples in the epoch
  std::int64_t epoch_ = 0, batches_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::int64_t next_to_make_ = 0, next_to_give_ = 0;
  std::map<std::int64_t, ImageBatch> ready_;
  std::exception_ptr failure_;
  std::set<std::string> skipped_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
  std::vector<std::unique_ptr<DeviceJpegDecoder>> decoders_;  // one a worker, with a device decoder
  std::unique_ptr<DeviceBatchBuffers> device_buffers_;
  std::atomic<std::int64_t> device_decoded_{0}, cpu_fallbacks_{0};
};

}  // namespace xpuperf::data
