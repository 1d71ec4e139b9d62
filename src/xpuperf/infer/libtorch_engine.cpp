// The `libtorch` engine: the case's own LibTorch model run eagerly. It compiles from the validated
// model, or loads a checkpoint given as exist_compiler_path.

#include "xpuperf/infer/libtorch_engine.h"

namespace xpuperf::infer {

void LibTorchEngine::adopt_model(const CompileInputs& in, const std::string& engine) {
  device_ = in.ctx.device;
  case_ = &in.inference_case;
  dtype_ = in.dtype;
  model_ = case_model(in, engine);
  channels_last_ = in.ctx.config.get_bool("channels_last", true);
  model_->eval();
}

void LibTorchEngine::finish_model(const CompileInputs& in) {
  model_->to(dtype_);
  if (channels_last_) make_channels_last(*model_);
  case_->finish_model(*model_, in.ctx);
}

torch::Tensor LibTorchEngine::prepare(const torch::Tensor& input) const {
  const torch::Tensor x = engine_input(input, device_, dtype_);
  return channels_last_ ? channels_last_input(x) : x;
}

std::string LibTorchEngine::placement() const {
  return precision_name(dtype_) + ", " + (device_.is_cuda() ? "cuda" : "cpu");
}

void LibTorchEngine::compile(const CompileInputs& in) {
  adopt_model(in, "libtorch");
  finish_model(in);
  describe_ = "libtorch eager, " + placement() + (channels_last_ ? ", channels-last" : "") +
              (in.compiled_path.empty() ? "" : ", weights from " + in.compiled_path);
}

EngineOutput LibTorchEngine::infer(const torch::Tensor& input) {
  const torch::NoGradGuard no_grad;
  return {case_->model_forward(*model_, prepare(input)), 0.0};
}

namespace {
const bool libtorch_registered = register_engine("libtorch", [] { return std::make_unique<LibTorchEngine>(); });
}  // namespace

}  // namespace xpuperf::infer
