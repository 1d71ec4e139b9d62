// The `aoti` engine: a PyTorch AOTInductor package (.pt2: torch.export, then
// torch._inductor.aoti_compile_and_package, in Python) given as exist_compiler_path. Built only
// against PyTorch 2.6 or newer, whose LibTorch has the package loader. The package fixes the
// device and precision it was compiled for; inputs are cast to the configured precision.

#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/version.h>

#include <filesystem>
#include <stdexcept>

#include "xpuperf/infer/engine.h"

namespace xpuperf::infer {

namespace {

class AotiEngine : public Engine {
 public:
  void compile(const CompileInputs& in) override {
    const std::string& path = in.compiled_path;
    if (path.empty())
      throw std::runtime_error(
          "engine aoti runs an AOTInductor package: set exist_compiler_path to a .pt2 file (in Python: "
          "torch._inductor.aoti_compile_and_package(torch.export.export(model, (example,))))");
    if (!std::filesystem::exists(path)) throw std::runtime_error("exist_compiler_path '" + path + "' does not exist");
    device_ = in.ctx.device;
    dtype_ = in.dtype;
    try {
      loader_ = std::make_unique<torch::inductor::AOTIModelPackageLoader>(path);
    } catch (const c10::Error& e) {
      throw std::runtime_error("LibTorch " + std::string(TORCH_VERSION) + " cannot load AOTInductor package " + path +
                               ": " + e.what_without_backtrace());
    }
    describe_ = "aoti, " + precision_name(dtype_) + " inputs, " + (device_.is_cuda() ? "cuda" : "cpu") + ", " + path;
  }

  EngineOutput infer(const torch::Tensor& input) override {
    const torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> inputs = {engine_input(input, device_, dtype_).contiguous()};
    std::vector<torch::Tensor> outputs = loader_->run(inputs);
    if (outputs.empty()) throw std::runtime_error("the AOTInductor package returned no outputs");
    return {outputs[0], 0.0};
  }

  std::string describe() const override { return describe_; }

 private:
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
  torch::Device device_{torch::kCPU};
  torch::Dtype dtype_ = torch::kFloat;
  std::string describe_;
};

const bool aoti_registered = register_engine("aoti", [] { return std::make_unique<AotiEngine>(); });

}  // namespace

}  // namespace xpuperf::infer
