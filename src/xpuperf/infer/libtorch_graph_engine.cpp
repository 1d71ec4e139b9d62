// The `libtorch-graph` engine, the C++ "compiler": batch norm folded into the convolutions (with
// cuDNN's conv+bias+add+ReLU fusion on CUDA), channels-last weights and inputs, the configured
// precision, and on CUDA one CUDA graph per batch size, captured at compile time and replayed.
// On the CPU it runs the folded, channels-last model eagerly.

#include <map>
#include <stdexcept>

#include "xpuperf/infer/libtorch_engine.h"
#include "xpuperf/models/folding.h"
#ifdef XPUPERF_HAVE_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace xpuperf::infer {

namespace {

// LibTorch's engine with compile passes: the model is folded before it takes its precision, and on
// CUDA replayed from graphs.
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
    if (device_.is_cuda()) {
#ifdef XPUPERF_HAVE_TORCH_CUDA
      at::globalContext().setBenchmarkCuDNN(config.get_bool("cudnn_benchmark", true));
      std::string sizes;
      for (const std::int64_t bs : in.batch_sizes) {
        capture(bs, in.sample_shape, in.sample_dtype);
        sizes += (sizes.empty() ? "" : ", ") + std::to_string(bs);
      }
      describe_ += ", CUDA graphs for batch sizes " + sizes;
#else
      throw std::runtime_error("this build's LibTorch has no CUDA: libtorch-graph cannot capture CUDA graphs");
#endif
    } else {
      describe_ += ", eager (CUDA graphs need a CUDA device)";
    }
    if (!in.compiled_path.empty()) describe_ += ", weights from " + in.compiled_path;
  }

  EngineOutput infer(const torch::Tensor& input) override {
    const torch::NoGradGuard no_grad;
    const torch::Tensor x = prepare(input);
#ifdef XPUPERF_HAVE_TORCH_CUDA
    if (auto g = graphs_.find(x.size(0)); g != graphs_.end()) {
      g->second.input.copy_(x);
      g->second.graph->replay();
      return {g->second.output, 0.0};
    }
#endif
    return {case_->model_forward(*model_, x), 0.0};
  }

 private:
#ifdef XPUPERF_HAVE_TORCH_CUDA
  struct Captured {
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    torch::Tensor input, output;  // static: replay reads and writes these
  };

  // Warm-up runs (cuDNN picks its algorithms) and the capture, on a side stream as CUDA graphs
  // require. Each graph keeps its own memory pool, so that graphs can replay in any order.
  void capture(std::int64_t batch_size, const std::vector<std::int64_t>& sample_shape, torch::Dtype sample_dtype) {
    std::vector<std::int64_t> shape = {batch_size};
    shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
    Captured c;
    // Ones, not zeros: an all-zero attention mask would mask every token.
    c.input = prepare(torch::ones(shape, torch::TensorOptions().dtype(sample_dtype)));
    c.graph = std::make_unique<at::cuda::CUDAGraph>();
    const c10::cuda::CUDAGuard device_guard(device_.index());
    const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, device_.index());
    stream.synchronize();
    {
      const c10::cuda::CUDAStreamGuard stream_guard(stream);
      for (int i = 0; i < 3; ++i) case_->model_forward(*model_, c.input);
      stream.synchronize();
      c.graph->capture_begin();
      c.output = case_->model_forward(*model_, c.input);
      c.graph->capture_end();
    }
    stream.synchronize();
    graphs_.emplace(batch_size, std::move(c));
  }
  std::map<std::int64_t, Captured> graphs_;
#endif
};

const bool libtorch_graph_registered =
    register_engine("libtorch-graph", [] { return std::make_unique<LibTorchGraphEngine>(); });

}  // namespace

}  // namespace xpuperf::infer
