#include "xpuperf/infer/case_weights.h"

#include <stdexcept>

#include "xpuperf/core/config.h"
#include "xpuperf/torchrt/weights.h"

namespace xpuperf::infer {

std::string load_case_weights(torch::nn::Module& model, const InferContext& ctx, const std::string& checkpoint,
                              const std::string& how_to_give, const std::map<std::string, std::string>& tied) {
  const std::string path = checkpoint.empty() ? ctx.config.get_string("checkpoint") : checkpoint;
  if (!path.empty()) {
    try {
      torchrt::load_weights(model, path, tied);
    } catch (const std::runtime_error& e) {
      throw ConfigError(std::string("checkpoint: ") + e.what());
    }
  }
  model.to(ctx.device);
  model.eval();
  return path.empty() ? "random weights (no checkpoint): accuracy is chance; " + how_to_give : "";
}

std::string join_caveats(const std::string& caveat, const std::string& more) {
  if (caveat.empty() || more.empty()) return caveat + more;
  return caveat + "; " + more;
}

}  // namespace xpuperf::infer
