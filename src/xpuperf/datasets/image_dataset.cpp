#include "xpuperf/datasets/image_dataset.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "xpuperf/core/log.h"
#include "xpuperf/core/repo.h"
#include "xpuperf/data/data_error.h"
#include "xpuperf/data/device_jpeg.h"
#include "xpuperf/data/shard_sampler.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/vendor_runtime.h"

namespace xpuperf::datasets {
namespace fs = std::filesystem;

namespace {
// Cores a rank needs for jpeg_decoder: auto to choose libjpeg-turbo over the device's decoder
// (whose decoding slows the step it runs beside). Whether 16 cores feed ResNet-50's step on an
// H100 (5,700 img/s; the GPU's decoder beside it: 90 %) as well is not settled:
// the resnet50 README says which measurement would decide it.
constexpr int kCoresForCpuDecoding = 12;

// This host's cores, shared by its ranks.
int cores_per_rank(int ranks_on_host) {
  return static_cast<int>(std::thread::hardware_concurrency()) / std::max(1, ranks_on_host);
}

// jpeg_decoder's value asks for a device decoder: `device`, or a decoder's own name.
bool names_a_device_decoder(const std::string& decoder) {
  return decoder != "auto" && decoder != "cpu";
}

// Whether the config, on a host with `cores_a_rank` cores a rank, decodes on the device when its
// vendor has a decoder.
bool asks_device_decoding(const Config& cfg, int cores_a_rank) {
  if (!cfg.has("jpeg_decoder") || cfg.get_bool("synthetic_data", false)) return false;
  const std::string decoder = cfg.get_string("jpeg_decoder", "auto");
  return names_a_device_decoder(decoder) || (decoder == "auto" && cores_a_rank < kCoresForCpuDecoding);
}
}  // namespace

ImageFolderDataset::ImageFolderDataset(data::ImageFolder folder, ImageDataOptions options, std::string what)
    : folder_(std::move(folder)), options_(options), what_(std::move(what)) {}

std::string ImageFolderDataset::description() const {
  return what_ + ", " + std::to_string(folder_.images.size()) + " images in " + std::to_string(folder_.classes.size()) +
         " classes from " + folder_.dir +
         (options_.decode_device.is_cpu() ? std::string(" (decoded with libjpeg-turbo)")
                                          : " (decoded on " + torchrt::device_text(options_.decode_device.str()) + ")");
}

std::int64_t ImageFolderDataset::batches_in_epoch(const EpochPlan& plan) const {
  // As the loader splits: training drops the last partial batch, evaluation keeps it.
  if (plan.train) return data::padded_shard_size(size(), plan.world_size) / plan.batch_size;
  const data::ShardSpec spec{size(), plan.rank, plan.world_size, false, 0, false};
  const auto n = static_cast<std::int64_t>(data::shard_indices(spec, 0).size());
  return (n + plan.batch_size - 1) / plan.batch_size;
}

void ImageFolderDataset::start_epoch(const EpochPlan& plan) {
  const bool same = loader_ && loader_plan_.batch_size == plan.batch_size && loader_plan_.train == plan.train &&
                    loader_plan_.rank == plan.rank && loader_plan_.world_size == plan.world_size &&
                    loader_plan_.seed == plan.seed;
  if (!same) {
    if (loader_) {
      const auto skipped = loader_->skipped_files();
      skipped_before_.insert(skipped.begin(), skipped.end());
    }
    data::ImageLoaderOptions o;
    o.image_size = options_.image_size;
    o.resize_to = options_.resize_to;
    o.train = plan.train;
    o.batch_size = plan.batch_size;
    o.threads = options_.threads;
    if (o.threads <= 0) o.threads = std::max(1, cores_per_rank(options_.ranks_on_host));
    o.batches_ahead = options_.batches_ahead > 0 ? options_.batches_ahead : 2 * o.threads;
    o.seed = plan.seed;
    o.rank = plan.rank;
    o.world_size = plan.world_size;
    o.device_decoder = options_.device_decoder;
    o.decode_device = options_.decode_device.index();
    o.max_image_pixels = options_.max_image_pixels;
    loader_.reset();  // its device buffers go before the next loader's are taken
    loader_ = std::make_unique<data::ImageFolderLoader>(folder_, o);
    log::info(what_ + " images: " + loader_->decoder());
    loader_plan_ = plan;
  }
  loader_->start_epoch(plan.epoch);
}

std::optional<Batch> ImageFolderDataset::next_batch() {
  if (!loader_) return std::nullopt;
  auto batch = loader_->next();
  if (!batch) return std::nullopt;
  if (batch->device_pixels) return device_batch(*batch);
  auto pixels = torch::empty({batch->size, batch->height, batch->width, 3},
                             torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(options_.pin_memory));
  std::memcpy(pixels.data_ptr<std::uint8_t>(), batch->pixels.data(), batch->pixels.size());
  auto labels = torch::tensor(batch->labels, torch::TensorOptions().dtype(torch::kLong));
  if (options_.pin_memory) labels = labels.pin_memory();
  return Batch{pixels.permute({0, 3, 1, 2}), labels};
}

Batch ImageFolderDataset::device_batch(const data::ImageBatch& batch) {
  // Copied out of the loader's buffer on the step's stream (its handle from the device's vendor),
  // which the buffer then waits for.
  const torch::Device device = options_.decode_device;
  // The device named, not asked of the pointer: LibTorch 1.13 knows only its GPU's pointers.
  auto pixels = at::for_blob(batch.device_pixels, {batch.size, batch.height, batch.width, 3})
                    .options(torch::TensorOptions().dtype(torch::kUInt8).device(device))
                    .target_device(device)
                    .make_tensor()
                    .clone();
  loader_->release(batch, torchrt::native_stream(device));
  // Pinned where the device's vendor pins host memory, so that the runtime's copy to the device is
  // asynchronous: a copy from pageable memory would wait for the steps queued before it, and the
  // device would idle while the next is queued.
  auto labels = torch::tensor(batch.labels, torch::TensorOptions().dtype(torch::kLong));
  if (options_.pin_memory) labels = labels.pin_memory();
  return Batch{pixels.permute({0, 3, 1, 2}), labels};
}

std::int64_t ImageFolderDataset::skipped_samples() const {
  std::set<std::string> all = skipped_before_;
  if (loader_) {
    const auto now = loader_->skipped_files();
    all.insert(now.begin(), now.end());
  }
  return static_cast<std::int64_t>(all.size());
}

SyntheticImageDataset::SyntheticImageDataset(std::int64_t size, std::int64_t classes, int image_size,
                                             std::uint64_t seed, const torch::Device& device, std::string what)
    : size_(size), classes_(classes), image_size_(image_size), what_(std::move(what)) {
  auto gen = at::detail::createCPUGenerator(seed);
  const std::int64_t pool = std::min<std::int64_t>(size, 64);
  pool_ = torch::randint(256, {pool, image_size, image_size, 3}, gen, torch::TensorOptions().dtype(torch::kUInt8))
              .to(device);
}

std::string SyntheticImageDataset::description() const {
  return "synthetic " + what_ + " (" + std::to_string(size_) + " random " + std::to_string(image_size_) + "x" +
         std::to_string(image_size_) + " images and labels: throughput only, no accuracy)";
}

Batch SyntheticImageDataset::get(const torch::Tensor& indices) const {
  const auto on_device = indices.to(pool_.device());
  const auto pixels = pool_.index_select(0, on_device.remainder(pool_.size(0)));
  return {pixels.permute({0, 3, 1, 2}), on_device.remainder(classes_)};
}

ImageNormalizer::ImageNormalizer(const torch::Device& device) {
  const auto options = torch::TensorOptions().dtype(torch::kFloat);
  // torchvision's Normalize(mean, std) after ToTensor's division by 255, as one shift and scale.
  mean_ = torch::tensor({0.485f * 255, 0.456f * 255, 0.406f * 255}, options).view({1, 3, 1, 1}).to(device);
  inv_std_ = torch::tensor({1 / (0.229f * 255), 1 / (0.224f * 255), 1 / (0.225f * 255)}, options)
                 .view({1, 3, 1, 1})
                 .to(device);
}

torch::Tensor ImageNormalizer::operator()(const torch::Tensor& images) const {
  return (images.to(torch::kFloat) - mean_) * inv_std_;
}

const data::DeviceJpegBackend* device_decoder_for(const Config& cfg, const torch::Device& device, int cores_a_rank) {
  if (device.is_cpu() || !asks_device_decoding(cfg, cores_a_rank)) return nullptr;
  return data::device_jpeg_for_device(torchrt::device_text(torch::Device(device.type()).str()));
}

void prepare_device_decoding(const Config& cfg, int ranks_on_host) {
  if (!asks_device_decoding(cfg, cores_per_rank(ranks_on_host))) return;
  // The device is not chosen yet: each decoder a plug-in brought prepares (one vendor a process).
  for (const auto& name : data::device_jpeg_names()) {
    const auto* backend = data::device_jpeg_named(name);
    if (backend && backend->before_device) backend->before_device();
  }
}

Datasets image_classification_data(const CaseContext& ctx, std::int64_t classes) {
  const Config& cfg = ctx.config;
  const int image_size = static_cast<int>(cfg.get_int("image_size", 224));
  const bool pin = torchrt::host_pinning(ctx.device.type()) != nullptr;
  const auto seed = static_cast<std::uint64_t>(cfg.get_int("seed", 1234));
  if (cfg.get_bool("synthetic_data", false)) {
    const std::int64_t train_size = cfg.get_int("synthetic_train_samples", 1281167);
    const std::int64_t eval_size = cfg.get_int("synthetic_eval_samples", 50000);
    return {std::make_shared<SyntheticImageDataset>(train_size, classes, image_size, seed, ctx.device, "train"),
            std::make_shared<SyntheticImageDataset>(eval_size, classes, image_size, seed + 1, ctx.device, "eval")};
  }
  const std::string dir = cfg.get_string("data_dir", "");
  if (dir.empty())
    throw ConfigError(
        "this case needs data_dir: a folder in ImageNet's layout (train/<class>/*.JPEG, val/<class>/*.JPEG; "
        "`xpuperf data fashion-mnist -o DIR` writes a small one), or synthetic_data: true");
  ImageDataOptions o;
  o.image_size = image_size;
  o.resize_to = static_cast<int>(cfg.get_int("resize_size", 256));
  o.threads = static_cast<int>(cfg.get_int("loader_threads", 0));
  o.batches_ahead = static_cast<int>(cfg.get_int("loader_batches_ahead", 0));
  o.pin_memory = pin;
  o.max_image_pixels = cfg.get_int("max_image_pixels", data::kDefaultMaxImagePixels);
  if (o.max_image_pixels < 0)
    throw ConfigError("max_image_pixels must be 0 (no limit) or a positive pixel count (got " +
                      std::to_string(o.max_image_pixels) + ")");
  o.ranks_on_host = std::max(1, ctx.local_world_size);
  const std::string decoder = cfg.get_string("jpeg_decoder", "auto");
  // auto: libjpeg-turbo while the host has the cores to keep up (kCoresForCpuDecoding), since
  // decoding on the device slows the step it runs beside (the GPU's, ResNet-50 on an H100: 10 %,
  // resnet50 README); the device's decoder where the cores per rank are fewer.
  o.device_decoder = device_decoder_for(cfg, ctx.device, cores_per_rank(o.ranks_on_host));
  if (names_a_device_decoder(decoder)) {
    const std::string where = cfg.at("jpeg_decoder").source.str() + ": jpeg_decoder: " + decoder;
    const std::string device = torchrt::device_text(ctx.device.str());
    if (!o.device_decoder)
      throw ConfigError(where + ": the device this run is on (" + device +
                        ") has no JPEG decoder in this build (decoders here: " +
                        join_or_none(data::device_jpeg_names()) + "); use jpeg_decoder: cpu");
    if (decoder != "device" && decoder != o.device_decoder->name)
      throw ConfigError(where + ": " + device + "'s decoder is " + o.device_decoder->name +
                        "; use jpeg_decoder: " + o.device_decoder->name + ", device or cpu");
  }
  if (o.device_decoder) {
    o.decode_device = torch::Device(ctx.device.type(), ctx.device.has_index() ? ctx.device.index() : 0);
    // The workers read files and headers and take turns at the GPU's hardware decoder:
    // two keep it at 18,000 crops/s on an H200 (one: 8,900, three: 21,000), ahead of MobileNetV2's
    // 11,700 images/s. A third thread adds nothing the step can use and costs it a little
    // (MobileNetV2 at 97.1 % of its synthetic rate with two, 96.1 % with three; resnet50 README).
    if (o.threads <= 0) o.threads = std::clamp(cores_per_rank(o.ranks_on_host), 1, 2);
  }
  if (o.image_size <= 0 || o.resize_to < o.image_size)
    throw ConfigError("image_size must be positive and resize_size at least image_size (got " +
                      std::to_string(o.image_size) + " and " + std::to_string(o.resize_to) + ")");
  auto split = [&](const std::string& key, const char* what) {
    const std::string path = (fs::path(dir) / cfg.get_string(key)).string();
    data::ImageFolder folder = data::list_image_folder(path);
    if (static_cast<std::int64_t>(folder.classes.size()) > classes)
      throw data::DataError(path + " has " + std::to_string(folder.classes.size()) +
                            " class folders, more than the model's " + std::to_string(classes) +
                            " outputs; set num_classes in the config");
    return std::make_shared<ImageFolderDataset>(std::move(folder), o, what);
  };
  Datasets d;
  d.train = split("train_data", "ImageNet-layout train");
  d.eval = split("eval_data", "ImageNet-layout val");
  return d;
}

}  // namespace xpuperf::datasets
