#include "xpuperf/parallel/expert_parallel.h"

namespace xpuperf::parallel {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Chunk j of x (along its first dimension, one a rank) to rank j of the group, chunk i of the result
// from rank i. Exchanging twice gives x back, so the gradient's way back is the same exchange.
torch::Tensor exchanged(ExpertParallel& ep, const torch::Tensor& x) {
  auto in = x.contiguous();
  auto out = torch::empty_like(in);
  ep.group().all_to_all(out, in);
  return out;
}

struct Exchange : torch::autograd::Function<Exchange> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, std::int64_t ep) {
    ctx->saved_data["ep"] = ep;
    return exchanged(*reinterpret_cast<ExpertParallel*>(ep), x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {exchanged(*reinterpret_cast<ExpertParallel*>(ctx->saved_data["ep"].toInt()), grads[0]), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor ExpertParallel::dispatch(const torch::Tensor& buffers) {
  const std::int64_t experts = buffers.size(0), capacity = buffers.size(1), hidden = buffers.size(2), n = size();
  const auto local = experts / n;
  // (ranks, local experts, capacity, hidden): chunk r holds rank r's experts' buffers.
  const auto received =
      Exchange::apply(buffers.reshape({n, local, capacity, hidden}), reinterpret_cast<std::int64_t>(this));
  return received.permute({1, 0, 2, 3}).reshape({local, n * capacity, hidden});
}

torch::Tensor ExpertParallel::combine(const torch::Tensor& outputs) {
  const std::int64_t local = outputs.size(0), hidden = outputs.size(2), n = size(), capacity = outputs.size(1) / n;
  const auto by_rank = outputs.reshape({local, n, capacity, hidden}).permute({1, 0, 2, 3});
  return Exchange::apply(by_rank, reinterpret_cast<std::int64_t>(this)).reshape({n * local, capacity, hidden});
}

std::int64_t ExpertParallel::max_over_group(std::int64_t value, const torch::TensorOptions& options) {
  auto t = torch::full({1}, value, options.dtype(torch::kLong));
  group_->all_reduce_max(t);
  return t.item<std::int64_t>();
}

void ExpertParallel::reduce_expert_gradients(const std::vector<torch::Tensor>& experts) {
  std::vector<torch::Tensor> with_grad;
  for (const auto& p : experts)
    if (p.grad().defined()) with_grad.push_back(p);
  // The replicas' mean, then / E: the sum over every rank's contribution / (replicas × E).
  if (replicas_) replicas_->average_gradients(with_grad);
  const double share = 1.0 / static_cast<double>(size());
  for (auto& p : with_grad) p.mutable_grad().mul_(share);
}

}  // namespace xpuperf::parallel
