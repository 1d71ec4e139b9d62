#include "xpuperf/train/step_graph.h"

#include <ATen/autocast_mode.h>

#include <stdexcept>

#include "xpuperf/torchrt/device.h"

namespace xpuperf::train {

struct StepGraph::Captured {
  std::unique_ptr<torchrt::DeviceGraph> graph;
  Batch input;                       // static: each replay reads these
  torch::Tensor loss;                // static: each replay writes it
  std::vector<torch::Tensor> grads;  // static: each replay writes the gradients here
};

bool StepGraph::available(const torch::Device& device) {
  return torchrt::device_has_graphs(device.type());
}

StepGraph::StepGraph(const torch::Device& device, std::vector<torch::Tensor> params, int eager_steps)
    : device_(device), params_(std::move(params)), eager_left_(eager_steps) {
  if (!available(device))
    throw std::invalid_argument("graphs need a device whose vendor brings them (NVIDIA's CUDA graphs), not " +
                                device.str());
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
  if (!captured_) {
    auto c = std::make_unique<Captured>();
    c->graph = torchrt::make_device_graph(device_);
    for (const auto& t : batch) c->input.push_back(t.clone());  // same strides: channels-last stays
    // Gradients are made inside the graph, in its memory; the autocast cache must be off during a
    // capture (a cached cast would be a tensor of the capture that later steps reuse).
    for (auto& p : params_) p.mutable_grad() = torch::Tensor();
    const bool cache = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
    c->graph->capture([&] { c->loss = step(c->input); });
    at::autocast::set_autocast_cache_enabled(cache);
    for (const auto& p : params_) c->grads.push_back(p.grad());
    captured_ = std::move(c);
  }
  for (std::size_t i = 0; i < batch.size(); ++i) captured_->input[i].copy_(batch[i], /*non_blocking=*/true);
  captured_->graph->replay();
  ++replays_;
  for (std::size_t i = 0; i < params_.size(); ++i) params_[i].mutable_grad() = captured_->grads[i];
  return captured_->loss;
}

}  // namespace xpuperf::train
