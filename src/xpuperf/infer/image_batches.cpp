#include "xpuperf/infer/image_batches.h"

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "xpuperf/data/data_error.h"
#include "xpuperf/data/image_folder.h"
#ifdef XPUPERF_HAVE_OPENCV
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace xpuperf::infer {
namespace {

#ifdef XPUPERF_HAVE_OPENCV
// torchvision's evaluation transform: shorter side to `resize`, centre crop, RGB, ImageNet's mean
// and standard deviation.
torch::Tensor preprocess(const std::string& path, const ImageTransform& t) {
  const cv::Mat bgr = cv::imread(path, cv::IMREAD_COLOR);
  if (bgr.empty()) throw data::DataError("cannot decode image " + path);
  const double scale = static_cast<double>(t.resize) / std::min(bgr.cols, bgr.rows);
  cv::Mat resized;
  cv::resize(bgr, resized,
             cv::Size(std::max(t.crop, static_cast<int>(bgr.cols * scale + 0.5)),
                      std::max(t.crop, static_cast<int>(bgr.rows * scale + 0.5))),
             0, 0, scale < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
  const cv::Rect crop((resized.cols - t.crop) / 2, (resized.rows - t.crop) / 2, t.crop, t.crop);
  cv::Mat rgb;
  cv::cvtColor(resized(crop), rgb, cv::COLOR_BGR2RGB);
  const torch::Tensor hwc = torch::from_blob(rgb.data, {t.crop, t.crop, 3}, torch::kUInt8).clone();
  const torch::Tensor mean = torch::tensor({0.485, 0.456, 0.406}).reshape({3, 1, 1});
  const torch::Tensor std = torch::tensor({0.229, 0.224, 0.225}).reshape({3, 1, 1});
  return (hwc.permute({2, 0, 1}).to(torch::kFloat).div_(255) - mean) / std;
}
#endif

}  // namespace

Batches image_folder_batches(const InferContext& ctx, const std::string& case_name, std::int64_t batch,
                             std::int64_t classes, const ImageTransform& transform) {
  const std::string dir = ctx.config.get_string("data_dir");
  if (dir.empty())
    throw ConfigError(case_name +
                      " needs data_dir: ImageNet's validation set as <dir>/<wnid>/<image> (--data-dir), or "
                      "synthetic_data: true");
#ifdef XPUPERF_HAVE_OPENCV
  auto folder = std::make_shared<data::ImageFolder>(data::list_image_folder(dir));
  if (static_cast<std::int64_t>(folder->classes.size()) > classes)
    throw data::DataError(dir + " has " + std::to_string(folder->classes.size()) + " class folders; " + case_name +
                          " has " + std::to_string(classes) + " classes");
  const std::int64_t limit = ctx.config.get_int("max_samples", 0);
  if (limit > 0 && static_cast<std::int64_t>(folder->images.size()) > limit) folder->images.resize(limit);
  const int workers = static_cast<int>(std::max<std::int64_t>(1, ctx.config.get_int("num_workers", 1)));
  const int size = transform.crop;
  Batches b;
  b.samples = static_cast<std::int64_t>(folder->images.size());
  b.batch_size = batch;
  b.count = static_cast<std::size_t>((b.samples + batch - 1) / batch);
  b.sample_shape = {3, size, size};
  b.description = "ImageNet-style folder " + dir + ": " + std::to_string(b.samples) + " images, " +
                  std::to_string(folder->classes.size()) + " classes, resized to " + std::to_string(transform.resize) +
                  ", centre " + std::to_string(size) + " crops, decoded with OpenCV by " + std::to_string(workers) +
                  " threads per batch";
  b.load = [folder, batch, workers, transform, size](std::size_t i) {
    const std::int64_t at = static_cast<std::int64_t>(i) * batch;
    const std::int64_t n = std::min<std::int64_t>(batch, static_cast<std::int64_t>(folder->images.size()) - at);
    torch::Tensor images = torch::empty({n, 3, size, size});
    torch::Tensor labels = torch::empty({n}, torch::kLong);
    std::vector<std::thread> threads;
    std::vector<std::string> errors(workers);
    for (int w = 0; w < workers; ++w)
      threads.emplace_back([&, w] {
        try {
          for (std::int64_t k = w; k < n; k += workers) {
            const auto& image = folder->images[static_cast<std::size_t>(at + k)];
            images[k].copy_(preprocess(image.path, transform));
            labels[k] = image.label;
          }
        } catch (const std::exception& e) {
          errors[w] = e.what();
        }
      });
    for (auto& t : threads) t.join();
    for (const auto& e : errors)
      if (!e.empty()) throw data::DataError(e);
    return Batch{images, labels};
  };
  return b;
#else
  (void)batch, (void)classes, (void)transform;
  throw ConfigError("this build has no OpenCV to decode " + dir +
                    " (Debian: libopencv-dev, then rebuild); synthetic_data: true runs without it");
#endif
}

Batches synthetic_image_batches(const InferContext& ctx, std::int64_t batch, std::int64_t classes, int size) {
  const std::int64_t samples = ctx.config.get_int("synthetic_samples", 10240);
  if (samples <= 0) throw ConfigError("synthetic_samples must be positive");
  // A few distinct batches, generated once and cycled: generating 150 KB of noise per image
  // would time the random number generator, not the model.
  auto gen = at::detail::createCPUGenerator(1234);
  const std::int64_t pool = std::min<std::int64_t>(4, (samples + batch - 1) / batch);
  auto images = std::make_shared<std::vector<torch::Tensor>>();
  auto labels = std::make_shared<std::vector<torch::Tensor>>();
  for (std::int64_t i = 0; i < pool; ++i) {
    images->push_back(torch::randn({batch, 3, size, size}, gen));
    labels->push_back(torch::randint(classes, {batch}, gen, torch::kLong));
  }
  Batches b;
  b.samples = samples;
  b.batch_size = batch;
  b.count = static_cast<std::size_t>((samples + batch - 1) / batch);
  b.sample_shape = {3, size, size};
  b.description = "synthetic: " + std::to_string(samples) + " random " + std::to_string(size) + "x" +
                  std::to_string(size) + " images (" + std::to_string(pool) +
                  " distinct batches, cycled), random labels (throughput only, no accuracy)";
  b.load = [images, labels, batch, samples, pool](std::size_t i) {
    const std::int64_t n = std::min<std::int64_t>(batch, samples - static_cast<std::int64_t>(i) * batch);
    const auto k = static_cast<std::size_t>(static_cast<std::int64_t>(i) % pool);
    return Batch{(*images)[k].slice(0, 0, n), (*labels)[k].slice(0, 0, n)};
  };
  return b;
}

}  // namespace xpuperf::infer
