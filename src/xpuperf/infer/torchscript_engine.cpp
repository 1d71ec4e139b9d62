// The `torchscript` engine: a TorchScript file (torch.jit.trace or torch.jit.script, then
// torch.jit.save, in Python) given as exist_compiler_path, frozen and optimised for inference by
// LibTorch's own passes, run in the configured precision.

#include <torch/script.h>
#include <torch/version.h>

#include <stdexcept>

#include "xpuperf/infer/engine.h"

namespace xpuperf::infer {

namespace {

class TorchScriptEngine : public CompiledFileEngine {
 public:
  TorchScriptEngine()
      : CompiledFileEngine("torchscript", "a TorchScript file",
                           "in Python: torch.jit.save(torch.jit.trace(model.eval(), example), 'model.pt')") {}

  EngineOutput infer(const torch::Tensor& input) override {
    const torch::NoGradGuard no_grad;
    const torch::jit::IValue out = module_.forward({input_for(input)});
    if (out.isTensor()) return {out.toTensor(), 0.0};
    if (out.isTuple() && !out.toTupleRef().elements().empty() && out.toTupleRef().elements()[0].isTensor())
      return {out.toTupleRef().elements()[0].toTensor(), 0.0};
    throw std::runtime_error("the TorchScript model returned " + out.tagKind() + ", not a tensor");
  }

 private:
  std::string load(const std::string& path, const Config& config) override {
    const bool freeze = config.get_bool("torchscript_freeze", true);
    try {
      module_ = torch::jit::load(path, device_);
      module_.eval();
      module_.to(dtype_);
      if (freeze) {
        module_ = torch::jit::freeze(module_);
        module_ = torch::jit::optimize_for_inference(module_);
      }
    } catch (const c10::Error& e) {
      throw std::runtime_error("LibTorch " + std::string(TORCH_VERSION) + " cannot load TorchScript file " + path +
                               ": " + e.what_without_backtrace() +
                               " (files saved by a newer PyTorch may not load in an older LibTorch)");
    }
    return placement() + (freeze ? ", frozen" : "");
  }

  torch::jit::Module module_;
};

const bool torchscript_registered =
    register_engine("torchscript", [] { return std::make_unique<TorchScriptEngine>(); });

}  // namespace

}  // namespace xpuperf::infer
