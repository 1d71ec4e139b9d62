#pragma once
// Image classification data for the vision cases, as batches of uint8 images in channels-last
// layout ([N, 3, H, W] with NHWC strides) and int64 labels. Bytes, not floats, cross to the device
// (a quarter of the traffic); normalize_images() turns them into the model's input there.

#include <torch/torch.h>

#include <memory>
#include <set>
#include <string>

#include "xpuperf/data/image_folder.h"
#include "xpuperf/data/image_loader.h"
#include "xpuperf/datasets/dataset.h"

namespace xpuperf::datasets {

struct ImageDataOptions {
  int image_size = 224;     // the crop fed to the model
  int resize_to = 256;      // evaluation: the shorter side before the centre crop
  int threads = 0;          // decoding threads per rank; 0: the host's cores shared by its ranks
  int batches_ahead = 0;    // 0: two a thread
  bool pin_memory = false;  // page-locked batches, so the copy to the device is asynchronous
  int ranks_on_host = 1;    // threads = 0 shares the cores between them
  // Not null: the device's JPEG decoder (data/device_jpeg.h) decodes on decode_device, and batches
  // arrive there.
  const data::DeviceJpegBackend* device_decoder = nullptr;
  torch::Device decode_device = torch::kCPU;
  std::int64_t max_image_pixels = data::kDefaultMaxImagePixels;  // larger images are skipped undecoded
};

// An ImageNet-layout folder (<dir>/<class>/<image>) decoded by data::ImageFolderLoader:
// training batches are random-resized crops with flips, evaluation batches centre crops; with a
// device decoder they are made in device memory.
class ImageFolderDataset : public Dataset {
 public:
  ImageFolderDataset(data::ImageFolder folder, ImageDataOptions options, std::string what);
  std::int64_t size() const override { return static_cast<std::int64_t>(folder_.images.size()); }
  std::string description() const override;
  std::int64_t batches_in_epoch(const EpochPlan& plan) const override;
  void start_epoch(const EpochPlan& plan) override;
  std::optional<Batch> next_batch() override;
  std::int64_t skipped_samples() const override;
  std::size_t classes() const { return folder_.classes.size(); }

 private:
  Batch device_batch(const data::ImageBatch& batch);

  data::ImageFolder folder_;
  ImageDataOptions options_;
  std::string what_;
  EpochPlan loader_plan_;  // what the loader was made for (epoch aside)
  std::unique_ptr<data::ImageFolderLoader> loader_;
  std::set<std::string> skipped_before_;  // from loaders made for an earlier plan
};

// Random images and labels, the same bytes for the same index: throughput without a dataset.
// Labelled synthetic in its description, so no accuracy is ever read from it. The images live on
// `device` (no input pipeline to measure: the accelerator alone); sample i is pool[i % 64], the
// pool drawn with torch.randint(256) from a CPU generator seeded `seed`, so Python can rebuild it.
class SyntheticImageDataset : public IndexedDataset {
 public:
  SyntheticImageDataset(std::int64_t size, std::int64_t classes, int image_size, std::uint64_t seed,
                        const torch::Device& device, std::string what);
  std::int64_t size() const override { return size_; }
  std::string description() const override;
  Batch get(const torch::Tensor& indices) const override;

 private:
  std::int64_t size_, classes_;
  int image_size_;
  std::string what_;
  torch::Tensor pool_;  // [P, H, W, 3] uint8 on the device
};

// uint8 images (any layout) to float, normalised with ImageNet's mean and standard deviation as
// torchvision's transforms do; the layout is kept. The constants live on the device once.
class ImageNormalizer {
 public:
  explicit ImageNormalizer(const torch::Device& device = torch::kCPU);
  torch::Tensor operator()(const torch::Tensor& images) const;

 private:
  torch::Tensor mean_, inv_std_;  // [1, 3, 1, 1], scaled to bytes
};

// The data a vision case reads, from its config: synthetic_data (random, labelled so), else the
// ImageNet layout under data_dir (train_data and eval_data name the split folders).
// image_size, resize_size, loader_threads, loader_batches_ahead, max_image_pixels and jpeg_decoder (cpu:
// libjpeg-turbo; device, or the device decoder's own name: the decoder the device's vendor
// brings; auto: cpu while the host has 12 cores a rank, else the device's decoder where there is
// one) tune the pipeline.
Datasets image_classification_data(const CaseContext& ctx, std::int64_t classes);

// The device decoder a vision case's config decodes with on `device`, on a host with `cores_a_rank`
// cores a rank (jpeg_decoder: device or its name, or auto with few cores); null: the CPU decodes.
const data::DeviceJpegBackend* device_decoder_for(const Config& cfg, const torch::Device& device, int cores_a_rank);

// Where this rank may decode on the device, lets each device decoder prepare the process before the
// device's context exists (NVIDIA's raises its hardware queues: its decoder's source says why).
void prepare_device_decoding(const Config& cfg, int ranks_on_host);

}  // namespace xpuperf::datasets
