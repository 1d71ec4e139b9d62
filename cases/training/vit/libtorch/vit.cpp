// ViT-B/16 on ImageNet (torchvision's vit_b_16 layout: models/vit.h); data, loss and metrics are
// the image classification cases' (train/image_classification.h).

#include "xpuperf/models/vit.h"

#include "xpuperf/train/families/image_classification.h"

namespace xpuperf::cases {
namespace {

class ViTCase : public train::ImageClassificationCase {
  Model build(const Config& cfg, std::int64_t classes, std::int64_t image_size) override {
    models::ViTConfig config = models::ViTConfig::b16();
    config.classes = classes;
    config.image_size = image_size;
    config.patch_size = cfg.get_int("patch_size", config.patch_size);
    config.layers = cfg.get_int("num_layers", config.layers);
    config.hidden = cfg.get_int("hidden_dim", config.hidden);
    config.heads = cfg.get_int("num_heads", config.heads);
    config.mlp = cfg.get_int("mlp_dim", config.mlp);
    if (config.patch_size < 1 || config.layers < 1 || config.heads < 1 || config.mlp < 1 ||
        config.hidden < config.heads || config.hidden % config.heads != 0)
      throw ConfigError("vit: the sizes do not fit: patch_size " + std::to_string(config.patch_size) + ", num_layers " +
                        std::to_string(config.layers) + ", hidden_dim " + std::to_string(config.hidden) +
                        " (a multiple of num_heads " + std::to_string(config.heads) + "), mlp_dim " +
                        std::to_string(config.mlp));
    if (image_size % config.patch_size != 0)
      throw ConfigError("vit: image_size " + std::to_string(image_size) + " is not a multiple of the patch size " +
                        std::to_string(config.patch_size));
    auto net = models::VisionTransformer(config);
    net->use_fused_kernels(cfg.get_bool("fused_kernels", false));
    return {net.ptr(), [net](const torch::Tensor& x) mutable { return net->forward(x); }, net->forward_flops()};
  }
};

XPUPERF_REGISTER_TRAINING_CASE("vit", "libtorch", ViTCase);

}  // namespace
}  // namespace xpuperf::cases
