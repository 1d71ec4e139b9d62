// The `libtorch` engine: the case's own LibTorch model run eagerly, without gradients, in the
// configured precision (channels-last unless channels_last: false, as PyTorch users run it).
// It compiles from the validated model, or loads a checkpoint given as exist_compiler_path.

#include "xpuperf/infer/engine.h"

namespace xpuperf::infer {

namespace {

class LibTorchEngine : public Engine {
 public:
  void compile(const CompileInputs& in) override {
    device_ = in.ctx.device;
    case_ = &in.inference_case;
    model_ = case_model(in, "libtorch");
    dtype_ = in.dtype;
    model_->to(dtype_);
    model_->eval();
    channels_last_ = in.ctx.config.get_bool("channels_last", true);
    if (channels_last_) make_channels_last(*model_);
    describe_ = "libtorch eager, " + precision_name(dtype_) + ", " + (device_.is_cuda() ? "cuda" : "cpu") +
                (channels_last_ ? ", channels-last" : "") +
                (in.compiled_path.empty() ? "" : ", weights from " + in.compiled_path);
  }

  EngineOutput infer(const torch::Tensor& input) override {
    const torch::NoGradGuard no_grad;
    const torch::Tensor x = engine_input(input, device_, dtype_);
    return {case_->model_forward(*model_, channels_last_ ? channels_last_input(x) : x), 0.0};
  }

  std::string describe() const override { return describe_; }

 private:
  torch::Device device_{torch::kCPU};
  torch::Dtype dtype_ = torch::kFloat;
  bool channels_last_ = true;
  InferenceCase* case_ = nullptr;
  std::shared_ptr<torch::nn::Module> model_;
  std::string describe_;
};

const bool libtorch_registered = register_engine("libtorch", [] { return std::make_unique<LibTorchEngine>(); });

}  // namespace

}  // namespace xpuperf::infer
