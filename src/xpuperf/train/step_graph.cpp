#include "xpuperf/train/step_graph.h"

#include <stdexcept>

#ifdef XPUPERF_HAVE_TORCH_CUDA
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace xpuperf::train {

struct StepGraph::Captured {
#ifdef XPUPERF_HAVE_TORCH_CUDA
  at::cuda::CUDAGraph graph;
#endif
  Batch input;                       // static: each replay reads these
  torch::Tensor loss;                // static: each replay writes it
  std::vector<torch::Tensor> grads;  // static: each replay writes the gradients here
};

bool StepGraph::available() {
#ifdef XPUPERF_HAVE_TORCH_CUDA
  return true;
#else
  return false;
#endif
}

StepGraph::StepGraph(const torch::Device& device, std::vector<torch::Tensor> params, int eager_steps)
    : device_(device), params_(std::move(params)), eager_left_(eager_steps) {
  if (!available() || !device.is_cuda())
    throw std::invalid_argument("CUDA graphs need a CUDA device and a LibTorch built with CUDA");
}

StepGraph::~StepGraph() = default;

namespace {
std::vector<std::vector<std::int64_t>> shapes_of(const Batch& batch) {
  std::vector<std::vector<std::int64_t>> shapes;
  for (const auto& t : batch) shapes.push_back(t.sizes().vec());
  return shapes;
}
}  // namespace

torch::Tensor StepGraph::run(const Batch& batch, const Step& step) {
  if (eager_left_ > 0) {
    --eager_left_;
    if (eager_left_ == 0) shapes_ = shapes_of(batch);  // the shape the graph will take
    return step(batch);
  }
  if (shapes_of(batch) != shapes_) return step(batch);
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (!captured_) {
    auto c = std::make_unique<Captured>();
    for (const auto& t : batch) c->input.push_back(t.clone());  // same strides: channels-last stays
    const c10::cuda::CUDAGuard device_guard(device_.index());
    torch::cuda::synchronize(device_.index());
    // Gradients are made inside the graph, in its memory; the autocast cache must be off during a
    // capture (a cached cast would be a tensor of the capture that later steps reuse).
    for (auto& p : params_) p.mutable_grad() = torch::Tensor();
    const bool cache = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
    const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, device_.index());
    {
      const c10::cuda::CUDAStreamGuard stream_guard(stream);
      // Thread-local: the loader's threads go on with their own CUDA work (nvJPEG, copies) during
      // the capture, which the default global mode would count as an error of the capture.
      c->graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
      c->loss = step(c->input);
      c->graph.capture_end();
    }
    stream.synchronize();
    at::autocast::set_autocast_cache_enabled(cache);
    for (const auto& p : params_) c->grads.push_back(p.grad());
    captured_ = std::move(c);
  }
  for (std::size_t i = 0; i < batch.size(); ++i) captured_->input[i].copy_(batch[i], /*non_blocking=*/true);
  captured_->graph.replay();
  ++replays_;
  for (std::size_t i = 0; i < params_.size(); ++i) params_[i].mutable_grad() = captured_->grads[i];
  return captured_->loss;
#else
  return step(batch);
#endif
}

}  // namespace xpuperf::train
