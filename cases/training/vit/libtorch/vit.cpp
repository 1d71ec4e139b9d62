// ViT-B/16 on ImageNet (torchvision's vit_b_16 layout: models/vit.h); data, loss and metrics are
// the image classification cases' (train/image_classification.h).

#include "xpuperf/models/vit.h"

#include "xpuperf/train/image_classification.h"

namespace xpuperf::cases {
namespace {

class ViTCase : public train::ImageClassificationCase {
  Model build(const Config&, std::int64_t classes, std::int64_t image_size) override {
    models::ViTConfig config = models::ViTConfig::b16();
    config.classes = classes;
    config.image_size = image_size;
    if (image_size % config.patch_size != 0)
      throw ConfigError("vit: image_size " + std::to_string(image_size) + " is not a multiple of the patch size " +
                        std::to_string(config.patch_size));
    auto net = models::VisionTransformer(config);
    return {net.ptr(), [net](const torch::Tensor& x) mutable { return net->forward(x); }, net->forward_flops()};
  }
};

XPUPERF_REGISTER_TRAINING_CASE("vit", "libtorch", ViTCase);

}  // namespace
}  // namespace xpuperf::cases
