#pragma once
// Seed 004's compiler class: an Engine is compiled once (step e) and then runs batches (step f),
// returning the outputs and `foo_time`, the seconds of that call that were not inference (e.g. a
// compiler that can only build on the first real input). A non-zero foo_time is reported and
// flagged.

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "xpuperf/infer/inference_case.h"

namespace xpuperf::infer {

struct CompileInputs {
  const InferContext& ctx;
  InferenceCase& inference_case;
  std::shared_ptr<torch::nn::Module> model;  // null when no_validation is set
  std::string onnx_path;                     // the exported or given ONNX file; may be empty
  std::string compiled_path;                 // exist_compiler_path: the engine's own format; may be empty
  bool fp16 = false;
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
  virtual EngineOutput infer(const torch::Tensor& input) = 0;
  virtual std::string describe() const = 0;
};

using EngineFactory = std::function<std::unique_ptr<Engine>()>;
bool register_engine(const std::string& name, EngineFactory factory);
std::unique_ptr<Engine> make_engine(const std::string& name);
std::vector<std::string> registered_engines();

}  // namespace xpuperf::infer
