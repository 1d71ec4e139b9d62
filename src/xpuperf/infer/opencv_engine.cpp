// The `opencv` engine: runs the exported (or given) ONNX file with OpenCV's DNN module on the
// CPU. It proves the export: its outputs are compared with LibTorch's in step (g).

#include <opencv2/dnn.hpp>
#include <stdexcept>

#include "xpuperf/infer/engine.h"

namespace xpuperf::infer {

namespace {

class OpenCvEngine : public Engine {
 public:
  void compile(const CompileInputs& in) override {
    const std::string path = in.compiled_path.empty() ? in.onnx_path : in.compiled_path;
    if (path.empty())
      throw std::runtime_error(
          "engine opencv runs an ONNX file: use a case that exports one, or give exist_onnx_path (or "
          "exist_compiler_path) an ONNX file");
    try {
      net_ = cv::dnn::readNetFromONNX(path);
    } catch (const cv::Exception& e) {
      throw std::runtime_error("OpenCV cannot read " + path + ": " + e.what());
    }
    net_.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
    net_.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
    describe_ = "opencv dnn " + std::string(CV_VERSION) + ", float32, cpu, " + path;
  }

  EngineOutput infer(const torch::Tensor& input) override {
    const torch::Tensor x = input.to(torch::kCPU, torch::kFloat).contiguous();
    std::vector<int> sizes(x.sizes().begin(), x.sizes().end());
    const cv::Mat blob(static_cast<int>(sizes.size()), sizes.data(), CV_32F, x.data_ptr<float>());
    net_.setInput(blob);
    cv::Mat out = net_.forward();
    std::vector<std::int64_t> shape;
    for (int d = 0; d < out.dims; ++d) shape.push_back(out.size[d]);
    return {torch::from_blob(out.ptr<float>(), shape, torch::kFloat).clone(), 0.0};
  }

  std::string describe() const override { return describe_; }

 private:
  cv::dnn::Net net_;
  std::string describe_;
};

const bool opencv_registered = register_engine("opencv", [] { return std::make_unique<OpenCvEngine>(); });

}  // namespace

}  // namespace xpuperf::infer
