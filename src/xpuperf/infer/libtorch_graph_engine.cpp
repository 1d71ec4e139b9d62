// The `libtorch-graph` engine, the C++ "compiler": batch norm folded into the convolutions (with
// cuDNN's conv+bias+add+ReLU fusion on CUDA), channels-last weights and inputs, the configured
// precision, and, where the device's vendor brings graphs (NVIDIA's CUDA graphs), one graph per
// batch size, captured at compile time and replayed. Elsewhere it runs the folded, channels-last
// model eagerly.

#include <map>
#include <stdexcept>

#include "xpuperf/infer/libtorch_engine.h"
#include "xpuperf/models/folding.h"
#include "xpuperf/torchrt/device.h"

namespace xpuperf::infer {

namespace {

// LibTorch's engine with compile passes: the model is folded before it takes its precision, and
// replayed from device graphs where the device has them.
class LibTorchGraphEngine : public LibTorchEngine {
 public:
  void compile(const CompileInputs& in) override {
    adopt_model(in, "libtorch-graph");  // folding may change it in place
    const Config& config = in.ctx.config;
    const bool cudnn_fusion = device_.is_cuda() && config.get_bool("cudnn_fusion", true);
    const torch::NoGradGuard no_grad;
    const int folded = models::fold_all_batchnorm(*model_, {cudnn_fusion});
    finish_model(in);
    describe_ = "libtorch-graph, " + placement() + ", " + std::to_string(folded) + " blocks with batch norm folded" +
                (cudnn_fusion && folded ? " (cuDNN conv+bias+add+ReLU fusion)" : "") +
                (channels_last_ ? ", channels-last" : "");
    if (device_.is_cuda()) at::globalContext().setBenchmarkCuDNN(config.get_bool("cudnn_benchmark", true));
    if (torchrt::device_has_graphs(device_.type())) {
      std::string sizes;
      for (const std::int64_t bs : in.batch_sizes) {
        capture(bs, in.sample_shape, in.sample_dtype);
        sizes += (sizes.empty() ? "" : ", ") + std::to_string(bs);
      }
      describe_ += ", device graphs for batch sizes " + sizes;
    } else {
      describe_ += ", eager (graphs need a device whose vendor brings them, as NVIDIA's CUDA graphs)";
    }
    if (!in.compiled_path.empty()) describe_ += ", weights from " + in.compiled_path;
  }

  EngineOutput infer(const torch::Tensor& input) override {
    const torch::NoGradGuard no_grad;
    const torch::Tensor x = prepare(input);
    if (auto g = graphs_.find(x.size(0)); g != graphs_.end()) {
      g->second.input.copy_(x);
      g->second.graph->replay();
      return {g->second.output, 0.0};
    }
    return {case_->model_forward(*model_, x), 0.0};
  }

 private:
  struct Captured {
    std::unique_ptr<torchrt::DeviceGraph> graph;
    torch::Tensor input, output;  // static: replay reads and writes these
  };

  // Warm-up runs (cuDNN picks its algorithms), then the capture. Each graph keeps its own memory
  // pool, so that graphs can replay in any order.
  void capture(std::int64_t batch_size, const std::vector<std::int64_t>& sample_shape, torch::Dtype sample_dtype) {
    std::vector<std::int64_t> shape = {batch_size};
    shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
    Captured c;
    // Ones, not zeros: an all-zero attention mask would mask every token.
    c.input = prepare(torch::ones(shape, torch::TensorOptions().dtype(sample_dtype)));
    for (int i = 0; i < 3; ++i) case_->model_forward(*model_, c.input);
    c.graph = torchrt::make_device_graph(device_);
    c.graph->capture([&] { c.output = case_->model_forward(*model_, c.input); });
    graphs_.emplace(batch_size, std::move(c));
  }
  std::map<std::int64_t, Captured> graphs_;
};

const bool libtorch_graph_registered =
    register_engine("libtorch-graph", [] { return std::make_unique<LibTorchGraphEngine>(); });

}  // namespace

}  // namespace xpuperf::infer
