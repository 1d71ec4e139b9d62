#pragma once
// `pipeline_parallel: P`: the model's blocks split into P consecutive stages, one a rank; a step's
// micro-batches flow through them in Megatron's 1F1B order (PipeDream-Flush): stage s runs P-s-1
// forwards ahead, then alternates one forward and one backward, then drains the backwards, so it
// holds at most P-s micro-batches' activations. The first stage also holds the embeddings, the
// last the final norm and output layer; a tied embedding lives on both and their gradients are
// summed. Activations go forward and their gradients back point to point; on each link the lower
// stage posts its send before its receive and the upper stage its receive first, so the two agree
// on the order (NCCL runs one link's operations in order).

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "xpuperf/torchrt/distributed.h"

namespace xpuperf::parallel {

class PipelineStage {
 public:
  // `stages`: the P ranks of this pipeline, in stage order (this rank's index is its stage).
  // `ends`: the first and the last stage (tied embeddings' gradients); null on the others.
  PipelineStage(std::shared_ptr<torchrt::Distributed> stages, std::shared_ptr<torchrt::Distributed> ends);
  int index() const { return stages_->rank(); }
  int count() const { return stages_->world_size(); }
  bool first() const { return index() == 0; }
  bool last() const { return index() + 1 == count(); }
  torchrt::Distributed& group() { return *stages_; }
  // The blocks [begin, end) this stage runs of `blocks`; std::invalid_argument if P does not divide them.
  std::pair<std::int64_t, std::int64_t> block_range(std::int64_t blocks) const;

  // --- For the model's forward (a model that implements PipelineModel).
  // The previous stage's output, this stage's input (not on the first stage).
  torch::Tensor received() const;
  // Hands `output` on to the next stage (not on the last); returns what the model returns in place
  // of its loss: a zero that no one backpropagates.
  torch::Tensor hand_on(const torch::Tensor& output);

  // --- For the runtime. `forward(m)` runs the case's forward step on micro-batch m (its loss on the
  // last stage); `backward(m, loss)` starts backward from the last stage's loss; `before_backward(m)`
  // runs before micro-batch m's backward on every stage. Returns the micro-batches' mean loss on
  // the last stage, zero elsewhere. `batches` (each micro-batch's first tensor, on the device) name
  // the messages' shapes: they are the same on every stage.
  using Forward = std::function<torch::Tensor(int)>;
  using Backward = std::function<void(int, const torch::Tensor&)>;
  torch::Tensor train_step(const std::vector<torch::Tensor>& batches, const Forward& forward, const Backward& backward,
                           const std::function<void(int)>& before_backward);
  // One forward without gradients (evaluation): receive, run `forward`, send.
  void forward_only(const torch::Tensor& batch, const std::function<void()>& forward);
  // Sums the tied parameters' gradients of the first and last stage (nothing elsewhere).
  void sum_tied_gradients(const std::vector<torch::Tensor>& tied);

 private:
  struct InFlight {
    torch::Tensor input;   // received, a leaf whose gradient goes back (not on the first stage)
    torch::Tensor output;  // handed on (not on the last stage)
    torch::Tensor loss;    // the last stage's
  };
  using Key = std::pair<std::vector<std::int64_t>, bool>;  // a batch's shape, training or not
  using Waits = std::vector<std::function<void()>>;
  struct Shape {
    std::vector<std::int64_t> sizes;
    torch::ScalarType dtype;
  };

  InFlight run_forward(torch::Tensor input, const Forward& forward, int m, bool training);
  void run_backward(InFlight& f, int m, const torch::Tensor& output_grad, const Backward& backward,
                    const std::function<void(int)>& before_backward);
  void post_send_forward(const Key& key, const torch::Tensor& output, Waits& waits);
  torch::Tensor post_recv_forward(const Key& key, const torch::Device& device, Waits& waits);
  torch::Tensor post_recv_backward(const InFlight& f, Waits& waits);
  void post_send_backward(const InFlight& f, Waits& waits);

  std::shared_ptr<torchrt::Distributed> stages_, ends_;
  torch::Tensor received_, handed_on_;
  // The shape of the activation for each batch shape, sent once ahead of the first such message.
  std::map<Key, Shape> sent_shapes_, received_shapes_;
};

// A model whose blocks can be split into pipeline stages. The runtime calls this (the cases never
// do) once the whole model is the same on every rank; afterwards the model's forward takes its
// input from the stage and hands its output on.
class PipelineModel {
 public:
  virtual ~PipelineModel() = default;
  // Keeps this stage's blocks and what the stage needs around them, drops the rest. Throws
  // std::invalid_argument when the blocks do not divide into the stages.
  virtual void split_for_pipeline(std::shared_ptr<PipelineStage> stage) = 0;
  // Parameters the first and the last stage both hold (a tied embedding); empty on the others.
  virtual std::vector<torch::Tensor> tied_across_stages() = 0;
};

}  // namespace xpuperf::parallel
