// ResNet-50 v1.5 on ImageNet (torchvision's layout: models/resnet50.h); data, loss and metrics
// are the image classification cases' (train/image_classification.h).

#include "xpuperf/models/resnet50.h"

#include "xpuperf/train/families/image_classification.h"

namespace xpuperf::cases {
namespace {

class ResNet50Case : public train::ImageClassificationCase {
  Model build(const Config& config, std::int64_t classes, std::int64_t image_size) override {
    auto net = models::ResNet50(classes);
    net->use_fused_kernels(config.get_bool("fused_kernels", false));
    // The convolutions scale with the image's area (exactly for sizes that are multiples of 32).
    const double fc_macs = 2048.0 * static_cast<double>(classes);
    const double scale = static_cast<double>(image_size * image_size) / (224.0 * 224.0);
    const double macs = (models::ResNet50Impl::forward_macs(classes) - fc_macs) * scale + fc_macs;
    return {net.ptr(), [net](const torch::Tensor& x) mutable { return net->forward(x); }, 2 * macs};
  }
};

XPUPERF_REGISTER_TRAINING_CASE("resnet50", "libtorch", ResNet50Case);

}  // namespace
}  // namespace xpuperf::cases
