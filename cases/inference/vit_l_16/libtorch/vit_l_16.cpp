// ViT-L/16 inference: the ImageNet validation folder (torchvision's ViT_L_16 evaluation transform:
// resize-242 / centre-crop-224 / normalise) or synthetic images labelled as such; top-1 accuracy
// judged on the CPU. The model is the training cases' Vision Transformer (torchvision's layout);
// weights from a torchvision vit_l_16 state_dict or a LibTorch archive.

#include <torch/torch.h>

#include "xpuperf/infer/case_weights.h"
#include "xpuperf/infer/image_batches.h"
#include "xpuperf/infer/inference_case.h"
#include "xpuperf/models/vit.h"

namespace xpuperf::cases {
namespace {
using models::VisionTransformer;
using models::VisionTransformerImpl;
using models::ViTConfig;

// ViT-L/16's sizes, or smaller ones from the parameters (tests).
ViTConfig vit_config(const Config& cfg) {
  ViTConfig c = ViTConfig::l16();
  c.image_size = cfg.get_int("image_size", c.image_size);
  c.patch_size = cfg.get_int("patch_size", c.patch_size);
  c.layers = cfg.get_int("num_layers", c.layers);
  c.hidden = cfg.get_int("hidden_dim", c.hidden);
  c.heads = cfg.get_int("num_heads", c.heads);
  c.mlp = cfg.get_int("mlp_dim", c.mlp);
  if (c.image_size < 1 || c.patch_size < 1 || c.image_size % c.patch_size != 0 || c.layers < 1 || c.heads < 1 ||
      c.hidden % c.heads != 0 || c.mlp < 1)
    throw ConfigError("vit_l_16's sizes do not fit: image_size " + std::to_string(c.image_size) +
                      " (a multiple of patch_size " + std::to_string(c.patch_size) + "), hidden_dim " +
                      std::to_string(c.hidden) + " (a multiple of num_heads " + std::to_string(c.heads) + ")");
  return c;
}

class VitL16Inference : public infer::InferenceCase {
 public:
  infer::Batches build_dataloader(const infer::InferContext& ctx) override {
    config_ = vit_config(ctx.config);
    const std::int64_t batch = ctx.config.get_int("batch_size");
    if (batch <= 0) throw ConfigError("batch_size must be positive");
    const int size = static_cast<int>(config_.image_size);
    if (ctx.config.get_bool("synthetic_data")) {
      synthetic_ = true;
      return infer::synthetic_image_batches(ctx, batch, config_.classes, size);
    }
    // torchvision's ViT_L_16_Weights.IMAGENET1K_V1: the shorter side to 242 for a 224 crop.
    return infer::image_folder_batches(ctx, "vit_l_16", batch, config_.classes, {size * 242 / 224, size});
  }

  std::shared_ptr<torch::nn::Module> create_model(const infer::InferContext& ctx,
                                                  const std::string& checkpoint) override {
    torch::manual_seed(1234);
    VisionTransformer model(vit_config(ctx.config));
    caveat_ =
        infer::join_caveats(infer::load_case_weights(*model, ctx, checkpoint,
                                                     "give checkpoint: a torchvision vit_l_16 state_dict "
                                                     "(torch.save(dict(model.state_dict()), F)) or a LibTorch archive"),
                            synthetic_ ? "synthetic images: accuracy is meaningless" : "");
    return model.ptr();
  }

  torch::Tensor model_forward(torch::nn::Module& model, const torch::Tensor& input) override {
    return dynamic_cast<VisionTransformerImpl&>(model).forward(input);
  }

  void evaluator(const torch::Tensor& outputs, const torch::Tensor& labels, infer::Evaluation& e) override {
    e.metric = "top1_accuracy";
    infer::count_top1(outputs, labels, e);
  }

  double flops_per_sample() const override { return config_.forward_flops(); }
  std::string caveat() const override { return caveat_; }

 private:
  ViTConfig config_ = ViTConfig::l16();
  std::string caveat_;
  bool synthetic_ = false;
};

XPUPERF_REGISTER_INFERENCE_CASE("vit_l_16", "libtorch", VitL16Inference);

}  // namespace
}  // namespace xpuperf::cases
