#include "xpuperf/parallel/activation_checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include "xpuperf/torchrt/compat.h"

namespace xpuperf::parallel {
namespace {

using torch::autograd::variable_list;

// The generators a block may draw from: the CPU's and, for a CUDA input, its device's.
struct RandomState {
  std::vector<std::pair<at::Generator, torch::Tensor>> saved;

  static RandomState capture(const torch::Device& device) {
    RandomState s;
    s.add(at::detail::getDefaultCPUGenerator());
    if (device.is_cuda()) s.add(at::globalContext().defaultGenerator(device));
    return s;
  }
  void add(at::Generator g) {
    std::lock_guard<std::mutex> lock(g.mutex());
    saved.emplace_back(g, g.get_state());
  }
  void restore() const {
    for (const auto& [g, state] : saved) {
      auto gen = g;
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(state);
    }
  }
};

// Autocast as the forward pass had it, for the recomputation on autograd's thread.
struct AutocastState {
  c10::DeviceType device;
  bool enabled;
  at::ScalarType dtype;
};

struct RecomputeBlock : torch::autograd::Node {
  BlockFunction block;
  torch::Tensor input;  // detached: the one activation kept
  bool input_requires_grad = false;
  RandomState random;
  AutocastState autocast{};

  variable_list apply(variable_list&& grads) override {
    if (!grads[0].defined()) return {torch::Tensor()};
    torch::Tensor x = input.detach();
    x.set_requires_grad(input_requires_grad);
    torch::Tensor y;
    {
      // Replay the forward's random draws, then give the generators back their current state.
      const RandomState now = RandomState::capture(input.device());
      random.restore();
      torch::AutoGradMode grad_mode(true);
      const bool was_enabled = compat::autocast_enabled(autocast.device);
      const at::ScalarType was_dtype = compat::autocast_dtype(autocast.device);
      compat::set_autocast_enabled(autocast.device, autocast.enabled);
      compat::set_autocast_dtype(autocast.device, autocast.dtype);
      if (autocast.enabled) at::autocast::increment_nesting();
      y = block(x);
      if (autocast.enabled && at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
      compat::set_autocast_enabled(autocast.device, was_enabled);
      compat::set_autocast_dtype(autocast.device, was_dtype);
      now.restore();
    }
    torch::autograd::backward({y}, {grads[0]});
    return {input_requires_grad ? x.grad() : torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpointed(BlockFunction block, const torch::Tensor& x) {
  if (!torch::GradMode::is_enabled()) return block(x);
  auto node = std::shared_ptr<RecomputeBlock>(new RecomputeBlock(), torch::autograd::deleteNode);
  node->random = RandomState::capture(x.device());
  node->autocast.device = x.device().type();
  node->autocast.enabled = compat::autocast_enabled(node->autocast.device);
  node->autocast.dtype = compat::autocast_dtype(node->autocast.device);
  torch::Tensor y;
  {
    torch::NoGradGuard no_grad;
    y = block(x);
  }
  node->block = std::move(block);
  node->input = x.detach();
  node->input_requires_grad = x.requires_grad();
  node->set_next_edges(torch::autograd::collect_next_edges(x));
  torch::autograd::set_history(y, node);
  return y;
}

std::vector<BlockStack*> block_stacks(torch::nn::Module& model) {
  std::vector<BlockStack*> found;
  if (auto* self = dynamic_cast<BlockStack*>(&model)) found.push_back(self);
  for (const auto& m : model.modules(/*include_self=*/false))
    if (auto* stack = dynamic_cast<BlockStack*>(m.get())) found.push_back(stack);
  return found;
}

int set_activation_checkpointing(torch::nn::Module& model, bool on) {
  const auto stacks = block_stacks(model);
  for (auto* s : stacks) s->set_activation_checkpointing(on);
  return static_cast<int>(stacks.size());
}

}  // namespace xpuperf::parallel
