// The `aoti` engine: a PyTorch AOTInductor package (.pt2: torch.export, then
// torch._inductor.aoti_compile_and_package, in Python) given as exist_compiler_path. Built only
// against PyTorch 2.6 or newer, whose LibTorch has the package loader. The package fixes the
// device and precision it was compiled for; inputs are cast to the configured precision.

#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/version.h>

#include <stdexcept>

#include "xpuperf/infer/engine.h"

namespace xpuperf::infer {

namespace {

class AotiEngine : public CompiledFileEngine {
 public:
  AotiEngine()
      : CompiledFileEngine("aoti", "an AOTInductor package (.pt2)",
                           "in Python: torch._inductor.aoti_compile_and_package(torch.export.export(model, "
                           "(example,)))") {}

  EngineOutput infer(const torch::Tensor& input) override {
    const torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> inputs = {input_for(input).contiguous()};
    std::vector<torch::Tensor> outputs = loader_->run(inputs);
    if (outputs.empty()) throw std::runtime_error("the AOTInductor package returned no outputs");
    return {outputs[0], 0.0};
  }

 private:
  std::string load(const std::string& path, const Config&) override {
    try {
      loader_ = std::make_unique<torch::inductor::AOTIModelPackageLoader>(path);
    } catch (const c10::Error& e) {
      throw std::runtime_error("LibTorch " + std::string(TORCH_VERSION) + " cannot load AOTInductor package " + path +
                               ": " + e.what_without_backtrace());
    }
    // The package fixes the device and precision it was compiled for; inputs are cast to ours.
    return precision_name(dtype_) + " inputs, " + (device_.is_cuda() ? "cuda" : "cpu");
  }

  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
};

const bool aoti_registered = register_engine("aoti", [] { return std::make_unique<AotiEngine>(); });

}  // namespace

}  // namespace xpuperf::infer
