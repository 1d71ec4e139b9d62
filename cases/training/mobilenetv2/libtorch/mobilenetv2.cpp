// MobileNetV2 on ImageNet (torchvision's mobilenet_v2 layout: models/mobilenet_v2.h); data, loss
// and metrics are the image classification cases' (train/image_classification.h).

#include "xpuperf/models/mobilenet_v2.h"
#include "xpuperf/train/families/image_classification.h"

namespace xpuperf::cases {
namespace {

class MobileNetV2Case : public train::ImageClassificationCase {
  Model build(const Config& config, std::int64_t classes, std::int64_t image_size) override {
    const double dropout = config.get_number("dropout", 0.2);
    if (dropout < 0 || dropout >= 1) throw ConfigError("dropout must be in [0, 1), got " + std::to_string(dropout));
    auto net = models::MobileNetV2(classes, dropout);
    net->use_fused_kernels(config.get_bool("fused_kernels", false));
    return {net.ptr(), [net](const torch::Tensor& x) mutable { return net->forward(x); },
            net->forward_flops(image_size)};
  }
};

XPUPERF_REGISTER_TRAINING_CASE("mobilenetv2", "libtorch", MobileNetV2Case);

}  // namespace
}  // namespace xpuperf::cases
