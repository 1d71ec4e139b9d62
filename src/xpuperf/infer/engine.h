#pragma once
// The compiler class of FlagPerf's inference framework: an Engine is compiled once (step e) and then runs batches (step
// f), returning the outputs and `foo_time`, the seconds of that call that were not inference (e.g. a compiler that can
// only build on the first real input). A non-zero foo_time is reported and flagged.

#include <torch/torch.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "xpuperf/infer/inference_case.h"

namespace xpuperf::infer {

struct CompileInputs {
  const InferContext& ctx;
  InferenceCase& inference_case;
  std::shared_ptr<torch::nn::Module> model;   // null when no_validation is set
  std::string onnx_path;                      // the exported or given ONNX file; may be empty
  std::string compiled_path;                  // exist_compiler_path: the engine's own format; may be empty
  torch::Dtype dtype = torch::kFloat;         // the precision to run in (fp16: true → half or bfloat16)
  std::vector<std::int64_t> sample_shape;     // one input sample, e.g. {3, 224, 224}
  std::vector<std::int64_t> batch_sizes;      // every batch size infer() will see, for static-shape engines
  torch::Dtype sample_dtype = torch::kFloat;  // the input's type: floating (cast to dtype) or integer
};

struct EngineOutput {
  torch::Tensor outputs;
  double foo_time = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  // Throws std::runtime_error saying what the engine needs when it cannot compile.
  virtual void compile(const CompileInputs& in) = 0;
  // The outputs may be the engine's own buffer: valid until the next infer() call.
  virtual EngineOutput infer(const torch::Tensor& input) = 0;
  virtual std::string describe() const = 0;
};

// float32, float16, bfloat16: how engines name their precision.
inline std::string precision_name(torch::Dtype dtype) {
  return dtype == torch::kHalf ? "float16" : dtype == torch::kBFloat16 ? "bfloat16" : "float32";
}

// An input on `device`: floating point in the engine's precision, integers (token ids, masks) as they are.
inline torch::Tensor engine_input(const torch::Tensor& x, const torch::Device& device, torch::Dtype dtype) {
  return x.is_floating_point() ? x.to(device, dtype) : x.to(device);
}

// Channels-last (NHWC) weights and inputs, which cuDNN and oneDNN run fastest: every 4-D
// parameter of `model`, and a 4-D input.
inline void make_channels_last(torch::nn::Module& model) {
  for (auto& p : model.parameters())
    if (p.dim() == 4) p.set_data(p.contiguous(torch::MemoryFormat::ChannelsLast));
}
inline torch::Tensor channels_last_input(const torch::Tensor& x) {
  return x.dim() == 4 ? x.contiguous(torch::MemoryFormat::ChannelsLast) : x;
}

// The case's LibTorch model for an engine that runs it (libtorch, libtorch-graph): a checkpoint
// given as exist_compiler_path, else the model validation ran (which the engine may change in
// place). Throws naming `engine` when there is neither.
inline std::shared_ptr<torch::nn::Module> case_model(const CompileInputs& in, const std::string& engine) {
  if (!in.compiled_path.empty()) return in.inference_case.create_model(in.ctx, in.compiled_path);
  if (in.model) return in.model;
  throw std::runtime_error("engine " + engine +
                           " runs the case's model: keep no_validation: false, or give exist_compiler_path: a "
                           "checkpoint of the model (as xpuperf train --set save_checkpoint=FILE writes)");
}

// An engine that runs a file another toolchain compiled, given as exist_compiler_path (torchscript,
// aoti): the path is required and must exist, with a message saying how to make one; the subclass
// loads it.
class CompiledFileEngine : public Engine {
 public:
  void compile(const CompileInputs& in) final {
    const std::string& path = in.compiled_path;
    if (path.empty())
      throw std::runtime_error("engine " + engine_ + " runs " + what_ + ": set exist_compiler_path to one (" + how_to_ +
                               ")");
    if (!std::filesystem::exists(path)) throw std::runtime_error("exist_compiler_path '" + path + "' does not exist");
    device_ = in.ctx.device;
    dtype_ = in.dtype;
    describe_ = engine_ + ", " + load(path, in.ctx.config) + ", " + path;
  }
  std::string describe() const override { return describe_; }

 protected:
  // `engine`: its name; `what`: "a TorchScript file"; `how_to`: how a user makes one in Python.
  CompiledFileEngine(std::string engine, std::string what, std::string how_to)
      : engine_(std::move(engine)), what_(std::move(what)), how_to_(std::move(how_to)) {}
  // Loads the file for device_ and dtype_; returns what the description says between the engine's
  // name and the path ("bfloat16, cuda, frozen"). Throws std::runtime_error naming the file.
  virtual std::string load(const std::string& path, const Config& config) = 0;
  // The input on the device, floating point in the precision.
  torch::Tensor input_for(const torch::Tensor& input) const { return engine_input(input, device_, dtype_); }
  std::string placement() const { return precision_name(dtype_) + ", " + (device_.is_cuda() ? "cuda" : "cpu"); }

  torch::Device device_{torch::kCPU};
  torch::Dtype dtype_ = torch::kFloat;

 private:
  std::string engine_, what_, how_to_, describe_;
};

using EngineFactory = std::function<std::unique_ptr<Engine>()>;
bool register_engine(const std::string& name, EngineFactory factory);
std::unique_ptr<Engine> make_engine(const std::string& name);
std::vector<std::string> registered_engines();

}  // namespace xpuperf::infer
