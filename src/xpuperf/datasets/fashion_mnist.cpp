#include "xpuperf/datasets/fashion_mnist.h"

#include "xpuperf/data/data_error.h"
#include "xpuperf/data/idx.h"

namespace xpuperf::datasets {

FashionMnist load_fashion_mnist(const std::string& dir, const std::string& prefix) {
  const data::IdxImageSet set = data::read_idx_image_set(dir, prefix, kFashionMnistClasses);
  if (set.images.shape[1] != 28 || set.images.shape[2] != 28)
    throw data::DataError(set.images.path + ": images are " + std::to_string(set.images.shape[1]) + "x" +
                          std::to_string(set.images.shape[2]) + ", Fashion-MNIST's are 28x28");
  const std::int64_t n = set.images.shape[0];
  auto images = torch::from_blob(const_cast<std::uint8_t*>(set.images.values.data()), {n, 1, 28, 28}, torch::kUInt8)
                    .to(torch::kFloat)
                    .div_(255.0)
                    .sub_(kFashionMnistPixelMean)
                    .div_(kFashionMnistPixelStd);
  auto labels =
      torch::from_blob(const_cast<std::uint8_t*>(set.labels.values.data()), {n}, torch::kUInt8).to(torch::kLong);
  return {images, labels, std::to_string(n) + " images from " + set.images.path};
}

}  // namespace xpuperf::datasets
