// MobileNetV2 on ImageNet (torchvision's mobilenet_v2 layout: models/mobilenet_v2.h); data, loss
// and metrics are the image classification cases' (train/image_classification.h).

#include "xpuperf/models/mobilenet_v2.h"
#include "xpuperf/train/image_classification.h"

namespace xpuperf::cases {
namespace {

class MobileNetV2Case : public train::ImageClassificationCase {
  Model build(std::int64_t classes, std::int64_t image_size) override {
    auto net = models::MobileNetV2(classes);
    return {net.ptr(), [net](const torch::Tensor& x) mutable { return net->forward(x); },
            net->forward_flops(image_size)};
  }
};

XPUPERF_REGISTER_TRAINING_CASE("mobilenetv2", "libtorch", MobileNetV2Case);

}  // namespace
}  // namespace xpuperf::cases
