#pragma once
// What the glm and glm_record cases share: GLM-large's sizes from the config (models/glm.h), the
// sequence length, GLM's [sop] and [eop] ids, the model, and GLM's own checkpoint names for
// init_checkpoint. A case adds its data, its step and its metrics.

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "xpuperf/models/glm.h"
#include "xpuperf/train/training_case.h"

namespace xpuperf::train {

class GlmCaseBase : public TrainingCase {
 public:
  std::shared_ptr<torch::nn::Module> model(const CaseContext& ctx) override {
    model_ = models::GlmModel(models::glm_config_from(ctx.config, models::GlmConfig::glm_large()));
    model_->fused_kernels = ctx.config.get_bool("fused_kernels", false);
    model_->to(ctx.device);
    return model_.ptr();
  }

  std::string convert_checkpoint(std::map<std::string, torch::Tensor>& tensors) const override {
    return models::convert_glm_names(tensors) ? "GLM's (blocklm) names" : "";
  }

 protected:
  // seq_length (default 512, in [16, max_position_embeddings]) and sop_id / eop_id (two ids below
  // vocab_size); ConfigError naming the key otherwise.
  void read_sizes(const Config& cfg) {
    const auto c = models::glm_config_from(cfg, models::GlmConfig::glm_large());
    length_ = cfg.get_int("seq_length", 512);
    if (length_ < 16 || length_ > c.positions)
      throw ConfigError(cfg.at("seq_length").source.str() + ": seq_length must be in [16, max_position_embeddings = " +
                        std::to_string(c.positions) + "], got " + std::to_string(length_));
    sop_ = static_cast<std::int32_t>(cfg.get_int("sop_id", 30522));
    eop_ = static_cast<std::int32_t>(cfg.get_int("eop_id", 30523));
    if (std::min(sop_, eop_) < 0 || std::max(sop_, eop_) >= c.vocab || sop_ == eop_)
      throw ConfigError("sop_id " + std::to_string(sop_) + " and eop_id " + std::to_string(eop_) +
                        " must be two ids below vocab_size " + std::to_string(c.vocab));
  }

  models::GlmModel model_{nullptr};
  std::int64_t length_ = 512;
  std::int32_t sop_ = 30522, eop_ = 30523;
};

}  // namespace xpuperf::train
