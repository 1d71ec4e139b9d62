#pragma once
// `cuda_graphs: true`: one training step's forward and backward captured as a device graph (the
// vendor's, torchrt::DeviceGraph: NVIDIA's CUDA graphs) and replayed, so the host launches one graph instead of
// hundreds of kernels. The optimizer step stays outside (its learning rate changes every step), as do gradient clipping
// and logging. The first steps run eagerly (cuDNN's algorithm search, the allocator's warm-up); a batch of another
// shape (an epoch's last, smaller one) runs eagerly too.

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

#include "xpuperf/train/training_case.h"

namespace xpuperf::train {

class StepGraph {
 public:
  // Forward and backward of one batch, returning the loss (backward already done).
  using Step = std::function<torch::Tensor(const Batch&)>;

  // Whether the device's vendor brings graphs (torchrt::device_has_graphs).
  static bool available(const torch::Device& device);

  StepGraph(const torch::Device& device, std::vector<torch::Tensor> params, int eager_steps = 3);
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // Runs `step` on `batch` (on the device): eagerly, or by replaying the captured graph, after
  // which the parameters' gradients are the graph's. Returns the loss.
  torch::Tensor run(const Batch& batch, const Step& step);
  std::int64_t replays() const { return replays_; }

 private:
  struct Captured;
  torch::Device device_;
  std::vector<torch::Tensor> params_;
  int eager_left_;
  std::vector<std::vector<std::int64_t>> shapes_;  // of the batches the graph takes
  std::unique_ptr<Captured> captured_;
  std::int64_t replays_ = 0;
};

}  // namespace xpuperf::train
