// The `tensorrt` engine: the exported (or given) ONNX file parsed by TensorRT's ONNX parser and
// built into an engine for the configured precision, with one optimisation profile covering
// every batch size the run will see; inputs and outputs stay on the GPU (LibTorch tensors).
// Built only where TensorRT's headers and libraries are found (TensorRT 10 API). No machine this
// project is built or tested on has TensorRT: this file has not been compiled by the project's
// CI (docs/INFERENCE.md).

#include <ATen/cuda/CUDAContext.h>
#include <NvInfer.h>
#include <NvOnnxParser.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "xpuperf/infer/engine.h"

namespace xpuperf::infer {

namespace {

class TensorRtLogger : public nvinfer1::ILogger {
 public:
  void log(Severity severity, const char* message) noexcept override {
    if (severity <= Severity::kWARNING) std::cerr << "tensorrt: " << message << "\n";
  }
};

nvinfer1::Dims dims_of(const std::vector<std::int64_t>& shape) {
  nvinfer1::Dims d{};
  d.nbDims = static_cast<std::int32_t>(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) d.d[i] = shape[i];
  return d;
}

class TensorRtEngine : public Engine {
 public:
  void compile(const CompileInputs& in) override {
    if (!in.ctx.device.is_cuda()) throw std::runtime_error("engine tensorrt needs a CUDA device");
    const std::string path = in.compiled_path.empty() ? in.onnx_path : in.compiled_path;
    if (path.empty())
      throw std::runtime_error(
          "engine tensorrt builds from an ONNX file: use a case that exports one, or give exist_onnx_path");
    device_ = in.ctx.device;
    builder_.reset(nvinfer1::createInferBuilder(logger_));
    network_.reset(builder_->createNetworkV2(0));
    parser_.reset(nvonnxparser::createParser(*network_, logger_));
    if (!parser_->parseFromFile(path.c_str(), static_cast<int>(nvinfer1::ILogger::Severity::kWARNING))) {
      std::string why;
      for (std::int32_t i = 0; i < parser_->getNbErrors(); ++i) why += std::string("; ") + parser_->getError(i)->desc();
      throw std::runtime_error("TensorRT cannot parse " + path + why);
    }
    std::unique_ptr<nvinfer1::IBuilderConfig> config(builder_->createBuilderConfig());
    if (in.dtype == torch::kHalf) config->setFlag(nvinfer1::BuilderFlag::kFP16);
    if (in.dtype == torch::kBFloat16) config->setFlag(nvinfer1::BuilderFlag::kBF16);
    input_name_ = network_->getInput(0)->getName();
    output_name_ = network_->getOutput(0)->getName();
    const std::int64_t largest = *std::max_element(in.batch_sizes.begin(), in.batch_sizes.end());
    std::vector<std::int64_t> smallest_shape = {1}, largest_shape = {largest};
    smallest_shape.insert(smallest_shape.end(), in.sample_shape.begin(), in.sample_shape.end());
    largest_shape.insert(largest_shape.end(), in.sample_shape.begin(), in.sample_shape.end());
    nvinfer1::IOptimizationProfile* profile = builder_->createOptimizationProfile();
    profile->setDimensions(input_name_.c_str(), nvinfer1::OptProfileSelector::kMIN, dims_of(smallest_shape));
    profile->setDimensions(input_name_.c_str(), nvinfer1::OptProfileSelector::kOPT, dims_of(largest_shape));
    profile->setDimensions(input_name_.c_str(), nvinfer1::OptProfileSelector::kMAX, dims_of(largest_shape));
    config->addOptimizationProfile(profile);
    std::unique_ptr<nvinfer1::IHostMemory> plan(builder_->buildSerializedNetwork(*network_, *config));
    if (!plan) throw std::runtime_error("TensorRT could not build an engine from " + path);
    runtime_.reset(nvinfer1::createInferRuntime(logger_));
    engine_.reset(runtime_->deserializeCudaEngine(plan->data(), plan->size()));
    context_.reset(engine_->createExecutionContext());
    if (!engine_ || !context_) throw std::runtime_error("TensorRT could not load the engine it built");
    describe_ = "tensorrt " + std::to_string(NV_TENSORRT_MAJOR) + "." + std::to_string(NV_TENSORRT_MINOR) + ", " +
                precision_name(in.dtype) + " allowed, cuda, batch 1.." + std::to_string(largest) + ", " + path;
  }

  EngineOutput infer(const torch::Tensor& input) override {
    const torch::Tensor x = input.to(device_, torch::kFloat).contiguous();
    if (!context_->setInputShape(input_name_.c_str(), dims_of(x.sizes().vec())))
      throw std::runtime_error("TensorRT: input shape " + c10::str(x.sizes()) + " is outside the engine's profile");
    const nvinfer1::Dims out = context_->getTensorShape(output_name_.c_str());
    const torch::Tensor y =
        torch::empty(std::vector<std::int64_t>(out.d, out.d + out.nbDims), x.options().dtype(torch::kFloat));
    context_->setTensorAddress(input_name_.c_str(), x.data_ptr());
    context_->setTensorAddress(output_name_.c_str(), y.data_ptr());
    if (!context_->enqueueV3(at::cuda::getCurrentCUDAStream(device_.index()).stream()))
      throw std::runtime_error("TensorRT: enqueueV3 failed");
    return {y, 0.0};
  }

  std::string describe() const override { return describe_; }

 private:
  TensorRtLogger logger_;
  std::unique_ptr<nvinfer1::IBuilder> builder_;
  std::unique_ptr<nvinfer1::INetworkDefinition> network_;
  std::unique_ptr<nvonnxparser::IParser> parser_;
  std::unique_ptr<nvinfer1::IRuntime> runtime_;
  std::unique_ptr<nvinfer1::ICudaEngine> engine_;
  std::unique_ptr<nvinfer1::IExecutionContext> context_;
  std::string input_name_, output_name_, describe_;
  torch::Device device_{torch::kCUDA};
};

const bool tensorrt_registered = register_engine("tensorrt", [] { return std::make_unique<TensorRtEngine>(); });

}  // namespace

}  // namespace xpuperf::infer
