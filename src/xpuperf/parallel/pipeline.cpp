#include "xpuperf/parallel/pipeline.h"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>

namespace xpuperf::parallel {
namespace {

// A shape message: dtype, rank, then the sizes.
constexpr std::int64_t kHeaderLength = 2 + 8;

void wait_all(std::vector<std::function<void()>>& waits) {
  for (auto& wait : waits) wait();
  waits.clear();
}

std::string sizes_text(const std::vector<std::int64_t>& sizes) {
  std::string s = "(";
  for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + ")";
}

}  // namespace

PipelineStage::PipelineStage(std::shared_ptr<torchrt::Distributed> stages, std::shared_ptr<torchrt::Distributed> ends)
    : stages_(std::move(stages)), ends_(std::move(ends)) {}

std::pair<std::int64_t, std::int64_t> PipelineStage::block_range(std::int64_t blocks) const {
  if (blocks % count() != 0)
    throw std::invalid_argument("pipeline_parallel " + std::to_string(count()) + " does not divide the model's " +
                                std::to_string(blocks) + " blocks");
  const std::int64_t per_stage = blocks / count();
  return {index() * per_stage, (index() + 1) * per_stage};
}

torch::Tensor PipelineStage::received() const {
  if (!received_.defined())
    throw std::logic_error("pipeline stage " + std::to_string(index()) +
                           ": the model asked for its input outside a pipelined step");
  return received_;
}

torch::Tensor PipelineStage::hand_on(const torch::Tensor& output) {
  handed_on_ = output;
  return torch::zeros({}, output.options().dtype(torch::kFloat));
}

void PipelineStage::post_send_forward(const Key& key, const torch::Tensor& output, Waits& waits) {
  Shape shape{output.sizes().vec(), output.scalar_type()};
  if (shape.sizes.size() > kHeaderLength - 2)
    throw std::runtime_error("pipeline: an activation of " + std::to_string(shape.sizes.size()) +
                             " dimensions is more than a stage can hand on");
  const auto known = sent_shapes_.find(key);
  if (known == sent_shapes_.end()) {
    auto header = torch::zeros({kHeaderLength}, torch::kLong);
    header[0] = static_cast<std::int64_t>(shape.dtype);
    header[1] = static_cast<std::int64_t>(shape.sizes.size());
    for (std::size_t i = 0; i < shape.sizes.size(); ++i) header[static_cast<std::int64_t>(i) + 2] = shape.sizes[i];
    waits.push_back(stages_->start_send(header.to(output.device()), index() + 1));
    sent_shapes_.emplace(key, shape);
  } else if (known->second.sizes != shape.sizes || known->second.dtype != shape.dtype) {
    throw std::runtime_error("pipeline stage " + std::to_string(index()) + ": batches of shape " +
                             sizes_text(key.first) + " gave an output of shape " + sizes_text(shape.sizes) + " after " +
                             sizes_text(known->second.sizes) +
                             " before; a stage's output must follow "
                             "from its batch's shape");
  }
  waits.push_back(stages_->start_send(output.detach().contiguous(), index() + 1));
}

torch::Tensor PipelineStage::post_recv_forward(const Key& key, const torch::Device& device, Waits& waits) {
  auto known = received_shapes_.find(key);
  if (known == received_shapes_.end()) {
    auto header = torch::empty({kHeaderLength}, torch::TensorOptions().dtype(torch::kLong).device(device));
    stages_->start_recv(header, index() - 1)();  // the buffer's shape depends on it
    header = header.cpu();
    Shape shape{{}, static_cast<torch::ScalarType>(header[0].item<std::int64_t>())};
    for (std::int64_t i = 0; i < header[1].item<std::int64_t>(); ++i)
      shape.sizes.push_back(header[i + 2].item<std::int64_t>());
    known = received_shapes_.emplace(key, shape).first;
  }
  auto buffer = torch::empty(known->second.sizes, torch::TensorOptions().dtype(known->second.dtype).device(device));
  waits.push_back(stages_->start_recv(buffer, index() - 1));
  return buffer;
}

torch::Tensor PipelineStage::post_recv_backward(const InFlight& f, Waits& waits) {
  auto buffer = torch::empty_like(f.output);
  waits.push_back(stages_->start_recv(buffer, index() + 1));
  return buffer;
}

void PipelineStage::post_send_backward(const InFlight& f, Waits& waits) {
  // An input the stage did not use has no gradient; its predecessor still waits for one.
  const torch::Tensor grad = f.input.grad().defined() ? f.input.grad().contiguous() : torch::zeros_like(f.input);
  waits.push_back(stages_->start_send(grad, index() - 1));
}

PipelineStage::InFlight PipelineStage::run_forward(torch::Tensor input, const Forward& forward, int m, bool training) {
  if (input.defined() && training) input.requires_grad_(true);
  received_ = input;
  handed_on_ = torch::Tensor();
  InFlight f;
  f.input = input;
  try {
    f.loss = forward(m);
  } catch (...) {
    received_ = handed_on_ = torch::Tensor();
    throw;
  }
  f.output = handed_on_;
  received_ = handed_on_ = torch::Tensor();
  if (!last() && !f.output.defined())
    throw std::logic_error("pipeline stage " + std::to_string(index()) +
                           ": the model's forward did not hand its output on to the next stage");
  return f;
}

void PipelineStage::run_backward(InFlight& f, int m, const torch::Tensor& output_grad, const Backward& backward,
                                 const std::function<void(int)>& before_backward) {
  before_backward(m);
  if (last())
    backward(m, f.loss);
  else
    torch::autograd::backward({f.output}, {output_grad});
  f.output = torch::Tensor();  // its graph is freed; the input's gradient is what is left to send
}

torch::Tensor PipelineStage::train_step(const std::vector<torch::Tensor>& batches, const Forward& forward,
                                        const Backward& backward, const std::function<void(int)>& before_backward) {
  const int micro = static_cast<int>(batches.size());
  const int warmup = std::min(count() - index() - 1, micro);
  const int steady = micro - warmup;
  const auto key = [&](int m) { return Key{batches[static_cast<std::size_t>(m)].sizes().vec(), true}; };
  const auto device = [&](int m) { return batches[static_cast<std::size_t>(m)].device(); };
  std::deque<InFlight> in_flight;  // forwards whose backward is still to run, oldest first
  Waits waits;
  torch::Tensor loss_sum;
  const auto add_loss = [&](const InFlight& f) {
    if (!last()) return;
    const auto l = f.loss.detach().to(torch::kFloat) / static_cast<double>(micro);
    loss_sum = loss_sum.defined() ? loss_sum + l : l;
  };

  // Warm-up: this stage's forwards ahead of the stages after it.
  for (int m = 0; m < warmup; ++m) {
    torch::Tensor input;
    if (!first()) input = post_recv_forward(key(m), device(m), waits);
    wait_all(waits);
    in_flight.push_back(run_forward(input, forward, m, true));
    add_loss(in_flight.back());
    if (!last()) post_send_forward(key(m), in_flight.back().output, waits);
    wait_all(waits);
  }
  // Steady state: one forward, one backward.
  torch::Tensor input;
  if (steady > 0 && !first()) input = post_recv_forward(key(warmup), device(warmup), waits);
  wait_all(waits);
  for (int i = 0; i < steady; ++i) {
    const int m = warmup + i;
    in_flight.push_back(run_forward(input, forward, m, true));
    add_loss(in_flight.back());
    InFlight& oldest = in_flight.front();
    torch::Tensor output_grad;
    if (!last()) {  // the lower end of the link to the next stage: send first
      post_send_forward(key(m), in_flight.back().output, waits);
      output_grad = post_recv_backward(oldest, waits);
    }
    wait_all(waits);
    run_backward(oldest, i, output_grad, backward, before_backward);
    if (!first()) {  // the upper end of the link to the previous stage: receive first
      if (i + 1 < steady) input = post_recv_forward(key(m + 1), device(m + 1), waits);
      post_send_backward(oldest, waits);
    }
    wait_all(waits);
    in_flight.pop_front();
  }
  // Cool-down: the backwards of the warm-up's forwards.
  for (int m = steady; m < micro; ++m) {
    InFlight& oldest = in_flight.front();
    torch::Tensor output_grad;
    if (!last()) output_grad = post_recv_backward(oldest, waits);
    wait_all(waits);
    run_backward(oldest, m, output_grad, backward, before_backward);
    if (!first()) post_send_backward(oldest, waits);
    wait_all(waits);
    in_flight.pop_front();
  }
  if (last()) return loss_sum;
  return torch::zeros({}, batches.front().options().dtype(torch::kFloat));
}

void PipelineStage::forward_only(const torch::Tensor& batch, const std::function<void()>& forward) {
  const Key key{batch.sizes().vec(), false};
  Waits waits;
  torch::Tensor input;
  if (!first()) input = post_recv_forward(key, batch.device(), waits);
  wait_all(waits);
  const InFlight f = run_forward(
      input,
      [&](int) {
        forward();
        return torch::Tensor();
      },
      0, false);
  if (!last()) post_send_forward(key, f.output, waits);
  wait_all(waits);
}

void PipelineStage::sum_tied_gradients(const std::vector<torch::Tensor>& tied) {
  if (!ends_) return;
  torch::NoGradGuard no_grad;
  for (const auto& p : tied) {
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    auto grad = p.grad();
    ends_->all_reduce_sum(grad);
  }
}

}  // namespace xpuperf::parallel
