#pragma once
// The `libtorch` engine (the case's own LibTorch model run eagerly, without gradients, in the
// configured precision, channels-last unless channels_last: false), which `libtorch-graph`
// extends with its compile passes.

#include <memory>
#include <string>

#include "xpuperf/infer/engine.h"

namespace xpuperf::infer {

class LibTorchEngine : public Engine {
 public:
  void compile(const CompileInputs& in) override;
  EngineOutput infer(const torch::Tensor& input) override;
  std::string describe() const override { return describe_; }

 protected:
  // Takes the case's model (the validated one, or exist_compiler_path's weights) and the settings
  // every LibTorch engine shares: device, precision, channels_last. `engine`: the name in messages.
  void adopt_model(const CompileInputs& in, const std::string& engine);
  // The model in its final precision and layout, in eval mode, with the case's own rewrites
  // (InferenceCase::finish_model).
  void finish_model(const CompileInputs& in);
  // The input as the model takes it: on the device, in the precision, channels-last if the model is.
  torch::Tensor prepare(const torch::Tensor& input) const;
  // ", cuda, channels-last" and the like: what every LibTorch engine's description ends with.
  std::string placement() const;

  torch::Device device_{torch::kCPU};
  torch::Dtype dtype_ = torch::kFloat;
  bool channels_last_ = true;
  InferenceCase* case_ = nullptr;
  std::shared_ptr<torch::nn::Module> model_;
  std::string describe_;
};

}  // namespace xpuperf::infer
