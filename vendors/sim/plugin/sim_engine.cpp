// The sim vendor's inference engine, `compiler: sim` (vendors/sim/inference/): what a vendor's
// compiler is to FlagPerf's inference framework. It takes the case's model onto the sim device in
// the configured precision and runs it there; a real vendor's engine would compile it to the
// chip's own format at this step.

#include "sim_engine.h"

#include "xpuperf/infer/engine.h"

namespace xpuperf::infer {
// Weak: a build without the inference cases (XPUPERF_CASES=quickstart) has no engine registry,
// and the plug-in then loads without its engine.
bool register_engine(const std::string& name, EngineFactory factory) __attribute__((weak));
}  // namespace xpuperf::infer

namespace xpuperf::sim {
namespace {

class SimEngine : public infer::Engine {
 public:
  void compile(const infer::CompileInputs& in) override {
    device_ = in.ctx.device;
    TORCH_CHECK(device_.type() == c10::DeviceType::PrivateUse1,
                "the sim engine runs on the sim device; this run's device is ", device_.str(),
                " (device: auto with --vendor sim)");
    dtype_ = in.dtype;
    case_ = &in.inference_case;
    model_ = infer::case_model(in, "sim");
    model_->eval();
    model_->to(device_, dtype_);
    case_->finish_model(*model_, in.ctx);
    describe_ = "sim: the case's model on sim:" + std::to_string(device_.index()) + " in " +
                infer::precision_name(dtype_) + ", ATen's CPU fallback" +
                (in.compiled_path.empty() ? "" : ", weights from " + in.compiled_path);
  }
  infer::EngineOutput infer(const torch::Tensor& input) override {
    const torch::NoGradGuard no_grad;
    return {case_->model_forward(*model_, infer::engine_input(input, device_, dtype_)), 0.0};
  }
  std::string describe() const override { return describe_; }

 private:
  torch::Device device_{torch::kCPU};
  torch::Dtype dtype_ = torch::kFloat;
  infer::InferenceCase* case_ = nullptr;
  std::shared_ptr<torch::nn::Module> model_;
  std::string describe_;
};

}  // namespace

bool register_engine() {
  if (!&infer::register_engine) return false;
  infer::register_engine("sim", [] { return std::make_unique<SimEngine>(); });
  return true;
}

}  // namespace xpuperf::sim
