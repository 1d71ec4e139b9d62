#pragma once
// The six case functions of FlagPerf's inference framework as a C++ interface. A case builds its data and model and
// judges outputs; the pipeline (pipeline.h) times and runs them, and an Engine (engine.h) runs the compiled model.

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "xpuperf/core/config.h"

namespace xpuperf::infer {

struct InferContext {
  const Config& config;  // merged configurations + parameters (+ vendor, --set)
  torch::Device device;
};

struct Batch {
  torch::Tensor input;   // on the CPU; the pipeline moves it
  torch::Tensor labels;  // on the CPU
};

// The evaluation set in batches of batch_size. Batches are loaded when the pipeline asks for them
// (inside the *_whole timing, as FlagPerf's inference framework counts loading), so a set larger than memory works.
struct Batches {
  std::size_t count = 0;                      // number of batches
  std::function<Batch(std::size_t)> load;     // batch i (0 <= i < count); may be called again
  std::string description;                    // what the data are (folder, file, synthetic, ...)
  std::int64_t samples = 0;                   // over all batches
  std::int64_t batch_size = 0;                // every batch but perhaps the last
  std::vector<std::int64_t> sample_shape;     // one input sample, e.g. {3, 224, 224}
  torch::Dtype sample_dtype = torch::kFloat;  // integer for token ids, which engines never cast

  // Batches over tensors already in memory (first dimension: samples).
  static Batches in_memory(const torch::Tensor& inputs, const torch::Tensor& labels, std::int64_t batch_size,
                           std::string description);
  // The distinct batch sizes the pipeline will run (the full one and the last, partial one).
  std::vector<std::int64_t> batch_sizes() const;
};

// What the evaluator adds up (on the CPU): correct answers out of a count.
struct Evaluation {
  std::string metric = "accuracy";
  double correct = 0;
  double count = 0;
  double value() const { return count > 0 ? correct / count : 0.0; }
};

// Top-1 accuracy of one batch's outputs (classes on dimension 1).
inline void count_top1(const torch::Tensor& outputs, const torch::Tensor& labels, Evaluation& e) {
  e.correct += outputs.argmax(1).eq(labels).sum().item<double>();
  e.count += static_cast<double>(labels.size(0));
}

class InferenceCase {
 public:
  virtual ~InferenceCase() = default;
  virtual Batches build_dataloader(const InferContext& ctx) = 0;
  // The model on ctx.device in eval mode, with weights from `checkpoint` ("" = the case's own
  // choice: parameters' checkpoint, else random weights, which the case must say).
  virtual std::shared_ptr<torch::nn::Module> create_model(const InferContext& ctx, const std::string& checkpoint) = 0;
  // The case's own rewrites of its model for the engines that run it (libtorch, libtorch-graph), after
  // validation and once the engine has cast it to its precision: e.g. products that read one input
  // joined into one. The model must compute what it did.
  virtual void finish_model(torch::nn::Module& /*model*/, const InferContext& /*ctx*/) {}
  // The framework's own forward (step c, validation).
  virtual torch::Tensor model_forward(torch::nn::Module& model, const torch::Tensor& input) = 0;
  // Adds one batch's outputs (moved to the CPU) to `e`.
  virtual void evaluator(const torch::Tensor& outputs, const torch::Tensor& labels, Evaluation& e) = 0;
  // Writes the model as ONNX under `dir` and returns the file; "" when this case has no exporter.
  virtual std::string export_model(torch::nn::Module&, const InferContext&, const std::string& /*dir*/) { return ""; }
  // Forward FLOPs of one sample, for MFU (configurations' `flops` takes precedence when set).
  virtual double flops_per_sample() const { return 0.0; }
  // The share of answers on which the engine's outputs for the first batch agree with the
  // framework's (`reference`), both on the CPU: top-1 classes (dimension 1) by default; negative
  // when the outputs have no such answers.
  virtual double output_agreement(const torch::Tensor& outputs, const torch::Tensor& reference) const {
    if (outputs.dim() != 2) return -1;
    return outputs.argmax(1).eq(reference.argmax(1)).to(torch::kFloat).mean().item<double>();
  }
  // (h) A generative case's own measurements after the engine's (decoding, serving), on `model`
  // (validation's, which the engine may have cast to `dtype`), printing progress lines; null when
  // the case does not generate (generates() false).
  virtual bool generates() const { return false; }
  virtual nlohmann::json generation(const InferContext&, std::shared_ptr<torch::nn::Module> /*model*/,
                                    torch::Dtype /*dtype*/, std::ostream& /*progress*/) {
    return nullptr;
  }
  // Notes on the weights or data the results depend on (e.g. "random weights: accuracy is chance").
  virtual std::string caveat() const { return ""; }
};

using InferenceCaseFactory = std::function<std::unique_ptr<InferenceCase>()>;
bool register_inference_case(const std::string& name, const std::string& framework, InferenceCaseFactory factory);
std::unique_ptr<InferenceCase> make_inference_case(const std::string& name, const std::string& framework);
std::vector<std::string> registered_inference_cases();  // "case:framework"

#define XPUPERF_REGISTER_INFERENCE_CASE(name, framework, Type)                                       \
  static const bool xpuperf_registered_inference_##Type = ::xpuperf::infer::register_inference_case( \
      name, framework, [] { return std::unique_ptr<::xpuperf::infer::InferenceCase>(new Type()); })

}  // namespace xpuperf::infer
