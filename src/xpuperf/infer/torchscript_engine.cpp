// The `torchscript` engine: a TorchScript file (torch.jit.trace or torch.jit.script, then
// torch.jit.save, in Python) given as exist_compiler_path, frozen and optimised for inference by
// LibTorch's own passes, run in the configured precision.

#include <torch/script.h>
#include <torch/version.h>

#include <filesystem>
#include <stdexcept>

#include "xpuperf/infer/engine.h"

namespace xpuperf::infer {

namespace {

class TorchScriptEngine : public Engine {
 public:
  void compile(const CompileInputs& in) override {
    const std::string& path = in.compiled_path;
    if (path.empty())
      throw std::runtime_error(
          "engine torchscript runs a TorchScript file: set exist_compiler_path to one (in Python: "
          "torch.jit.save(torch.jit.trace(model.eval(), example), 'model.pt'))");
    if (!std::filesystem::exists(path)) throw std::runtime_error("exist_compiler_path '" + path + "' does not exist");
    device_ = in.ctx.device;
    dtype_ = in.dtype;
    try {
      module_ = torch::jit::load(path, device_);
      module_.eval();
      module_.to(dtype_);
      if (in.ctx.config.get_bool("torchscript_freeze", true)) {
        module_ = torch::jit::freeze(module_);
        module_ = torch::jit::optimize_for_inference(module_);
      }
    } catch (const c10::Error& e) {
      throw std::runtime_error("LibTorch " + std::string(TORCH_VERSION) + " cannot load TorchScript file " + path +
                               ": " + e.what_without_backtrace() +
                               " (files saved by a newer PyTorch may not load in an older LibTorch)");
    }
    describe_ = "torchscript, " + precision_name(dtype_) + ", " + (device_.is_cuda() ? "cuda" : "cpu") + ", " +
                (in.ctx.config.get_bool("torchscript_freeze", true) ? "frozen, " : "") + path;
  }

  EngineOutput infer(const torch::Tensor& input) override {
    const torch::NoGradGuard no_grad;
    const torch::jit::IValue out = module_.forward({engine_input(input, device_, dtype_)});
    if (out.isTensor()) return {out.toTensor(), 0.0};
    if (out.isTuple() && !out.toTupleRef().elements().empty() && out.toTupleRef().elements()[0].isTensor())
      return {out.toTupleRef().elements()[0].toTensor(), 0.0};
    throw std::runtime_error("the TorchScript model returned " + out.tagKind() + ", not a tensor");
  }

  std::string describe() const override { return describe_; }

 private:
  torch::jit::Module module_;
  torch::Device device_{torch::kCPU};
  torch::Dtype dtype_ = torch::kFloat;
  std::string describe_;
};

const bool torchscript_registered =
    register_engine("torchscript", [] { return std::make_unique<TorchScriptEngine>(); });

}  // namespace

}  // namespace xpuperf::infer
