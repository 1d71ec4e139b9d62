#include "xpuperf/parallel/tensor_parallel.h"

#include <optional>
#include <set>
#include <stdexcept>

#include "xpuperf/torchrt/compat.h"

namespace xpuperf::parallel {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

TensorParallel* group_of(AutogradContext* ctx) {
  return reinterpret_cast<TensorParallel*>(ctx->saved_data["tp"].toInt());
}

torch::Tensor summed(TensorParallel& tp, const torch::Tensor& x) {
  auto sum = x.contiguous().clone();
  tp.group().all_reduce_sum(sum);
  return sum;
}

void require_tokens_divide(const TensorParallel& tp, const torch::Tensor& x) {
  TORCH_CHECK(x.size(1) % tp.size() == 0, "sequence_parallel: the ", x.size(1),
              " tokens of a sample do not divide over tensor_parallel ", tp.size(),
              ": give a sequence length they divide, or sequence_parallel: false");
}

// A collective over the tokens started: the result, tokens first (tokens, batch, ...), once `wait`
// has been called. The tokens go first so that a rank's block of them is contiguous.
struct TokensInFlight {
  torch::Tensor tokens_first, sent;  // sent: kept alive until the wait
  std::function<void()> wait;
  // The result as the models hold activations: (batch, tokens, ...).
  torch::Tensor batch_first() {
    wait();
    return tokens_first.transpose(0, 1).contiguous();
  }
};

// Starts gathering every rank's tokens of x (batch, tokens / T, ...) in rank order.
TokensInFlight start_gather_tokens(TensorParallel& tp, const torch::Tensor& x) {
  TokensInFlight f;
  f.sent = x.transpose(0, 1).contiguous();
  auto sizes = f.sent.sizes().vec();
  sizes[0] *= tp.size();
  f.tokens_first = torch::empty(sizes, f.sent.options());
  f.wait = tp.group().start_all_gather(f.tokens_first.view({-1}), f.sent.view({-1}));
  return f;
}

// Starts summing x (batch, tokens, ...) over the group, each rank keeping its share of the tokens.
TokensInFlight start_scatter_tokens(TensorParallel& tp, const torch::Tensor& x) {
  require_tokens_divide(tp, x);
  TokensInFlight f;
  f.sent = x.transpose(0, 1).contiguous();
  auto sizes = f.sent.sizes().vec();
  sizes[0] /= tp.size();
  f.tokens_first = torch::empty(sizes, f.sent.options());
  f.wait = tp.group().start_reduce_scatter_sum(f.tokens_first.view({-1}), f.sent.view({-1}));
  return f;
}

// Every rank's tokens of x (batch, tokens / T, ...) in rank order: (batch, tokens, ...).
torch::Tensor gather_tokens(TensorParallel& tp, const torch::Tensor& x) {
  return start_gather_tokens(tp, x).batch_first();
}

// This rank's tokens of the sum over the group of x (batch, tokens, ...).
torch::Tensor scatter_tokens(TensorParallel& tp, const torch::Tensor& x) {
  return start_scatter_tokens(tp, x).batch_first();
}

torch::Tensor own_tokens(TensorParallel& tp, const torch::Tensor& x) {
  require_tokens_divide(tp, x);
  const auto part = x.size(1) / tp.size();
  return x.narrow(1, tp.rank() * part, part).contiguous();
}

// x as it is (a view, for autograd's node), whatever the group.
torch::Tensor same(TensorParallel&, const torch::Tensor& x) {
  return x.view_as(x);
}

// The group's operators on activations: `Forward` of x, and `Backward` of the gradient.
using GroupOp = torch::Tensor (*)(TensorParallel&, const torch::Tensor&);
template <GroupOp Forward, GroupOp Backward>
struct GroupFunction : torch::autograd::Function<GroupFunction<Forward, Backward>> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, std::int64_t tp) {
    ctx->saved_data["tp"] = tp;
    return Forward(*reinterpret_cast<TensorParallel*>(tp), x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {Backward(*group_of(ctx), grads[0]), torch::Tensor()};
  }
};
using CopyIn = GroupFunction<same, summed>;                          // Megatron's f
using ReduceOut = GroupFunction<summed, same>;                       // Megatron's g
using GatherTokens = GroupFunction<gather_tokens, scatter_tokens>;   // f with sequence parallelism
using ScatterTokens = GroupFunction<scatter_tokens, gather_tokens>;  // g with sequence parallelism
using GatherForWhole = GroupFunction<gather_tokens, own_tokens>;
using ShareOfWhole = GroupFunction<own_tokens, gather_tokens>;

// x Wᵀ entering the group (Megatron's f fused with the product). Under autocast the forward's
// product runs in the autocast type; the backward's products run in the incoming gradient's type,
// as autograd's own casts would have them, and each gradient returns in its input's type. (No bias
// argument: LibTorch 1.13's custom functions take no undefined tensor.)
struct ColumnLinear : torch::autograd::Function<ColumnLinear> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                               std::int64_t tp) {
    ctx->saved_data["tp"] = tp;
    ctx->save_for_backward({x, weight});
    return torch::linear(x, weight);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &weight = saved[1];
    const torch::Tensor g = grads[0];
    const auto type = g.scalar_type();
    torch::Tensor grad_x, grad_weight;
    std::function<void()> summed = [] {};
    if (ctx->needs_input_grad(0)) {
      grad_x = g.matmul(weight.to(type)).contiguous();
      summed = group_of(ctx)->group().start_all_reduce_sum(grad_x);
    }
    if (ctx->needs_input_grad(1))
      grad_weight = g.reshape({-1, g.size(-1)}).t().mm(x.reshape({-1, x.size(-1)}).to(type)).to(weight.scalar_type());
    summed();
    if (grad_x.defined()) grad_x = grad_x.to(x.scalar_type());
    return {grad_x, grad_weight, torch::Tensor()};
  }
};

// The same product with sequence parallelism: x is this rank's tokens, gathered from every rank
// before the product. Backward, as Megatron-LM's: x is gathered again (the forward keeps only its
// share) while the input's gradient is computed, and that gradient is reduce-scattered while the
// weight's is.
// Under autocast the product takes x in the autocast type: x is cast before it is gathered, so that
// its tokens travel, and wait for the backward, in half fp32's bytes (as Megatron-LM's bf16
// activations do); the product's values are the same.
struct GatheredColumnLinear : torch::autograd::Function<GatheredColumnLinear> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                               std::int64_t tp) {
    const auto device = x.device().type();
    const auto sent =
        x.scalar_type() == torch::kFloat && compat::autocast_enabled(device) ? x.to(compat::autocast_dtype(device)) : x;
    ctx->saved_data["tp"] = tp;
    ctx->saved_data["x_type"] = static_cast<std::int64_t>(x.scalar_type());
    ctx->save_for_backward({sent, weight});
    return torch::linear(gather_tokens(*reinterpret_cast<TensorParallel*>(tp), sent), weight);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &weight = saved[1];  // x as sent
    const auto x_type = static_cast<torch::ScalarType>(ctx->saved_data["x_type"].toInt());
    TensorParallel& tp = *group_of(ctx);
    const torch::Tensor g = grads[0];
    const auto type = g.scalar_type();
    std::optional<TokensInFlight> whole_x, grad_x;
    if (ctx->needs_input_grad(1)) whole_x = start_gather_tokens(tp, x);
    if (ctx->needs_input_grad(0)) grad_x = start_scatter_tokens(tp, g.matmul(weight.to(type)));
    torch::Tensor grad_weight;
    if (whole_x)
      grad_weight = g.reshape({-1, g.size(-1)})
                        .t()
                        .mm(whole_x->batch_first().reshape({-1, x.size(-1)}).to(type))
                        .to(weight.scalar_type());
    return {grad_x ? grad_x->batch_first().to(x_type) : torch::Tensor(), grad_weight, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor TensorParallel::column_linear(const torch::Tensor& x, const torch::Tensor& weight,
                                            const torch::Tensor& bias) {
  const auto self = reinterpret_cast<std::int64_t>(this);
  const auto y =
      sequence_parallel_ ? GatheredColumnLinear::apply(x, weight, self) : ColumnLinear::apply(x, weight, self);
  return bias.defined() ? y + bias : y;
}

torch::Tensor TensorParallel::copy_in(const torch::Tensor& x) {
  const auto self = reinterpret_cast<std::int64_t>(this);
  return sequence_parallel_ ? GatherTokens::apply(x, self) : CopyIn::apply(x, self);
}

torch::Tensor TensorParallel::reduce_out(const torch::Tensor& x) {
  const auto self = reinterpret_cast<std::int64_t>(this);
  return sequence_parallel_ ? ScatterTokens::apply(x, self) : ReduceOut::apply(x, self);
}

torch::Tensor TensorParallel::sum_gradient(const torch::Tensor& x) {
  return CopyIn::apply(x, reinterpret_cast<std::int64_t>(this));
}

torch::Tensor TensorParallel::gather_for_whole(const torch::Tensor& x) {
  return sequence_parallel_ ? GatherForWhole::apply(x, reinterpret_cast<std::int64_t>(this)) : x;
}

torch::Tensor TensorParallel::share_of_whole(const torch::Tensor& x) {
  return sequence_parallel_ ? ShareOfWhole::apply(x, reinterpret_cast<std::int64_t>(this)) : x;
}

torch::Tensor whole_parameter(TensorParallel* group, const torch::Tensor& p) {
  return group && group->sequence_parallel() && p.defined() ? group->sum_gradient(p) : p;
}

torch::Tensor layer_norm(torch::nn::LayerNorm norm, const torch::Tensor& x, TensorParallel* sequence) {
  if (!sequence) return norm(x);
  return torch::layer_norm(x, norm->options.normalized_shape(), whole_parameter(sequence, norm->weight),
                           whole_parameter(sequence, norm->bias), norm->options.eps());
}

void require_divides(const TensorParallel& tp, std::int64_t count, const std::string& whose, const std::string& what) {
  if (count % tp.size() != 0)
    throw std::invalid_argument("tensor_parallel " + std::to_string(tp.size()) + " does not divide " + whose + " " +
                                std::to_string(count) + " " + what);
}

torch::Tensor model_parallel_gradient_norm(const std::vector<torch::Tensor>& params,
                                           const std::vector<torch::Tensor>& split, torchrt::Distributed* split_group,
                                           torchrt::Distributed* stages,
                                           const std::vector<torch::Tensor>& counted_elsewhere) {
  std::set<const c10::TensorImpl*> is_split, skipped;
  for (const auto& p : split) is_split.insert(p.unsafeGetTensorImpl());
  for (const auto& p : counted_elsewhere) skipped.insert(p.unsafeGetTensorImpl());
  const auto options = params.front().options().dtype(torch::kFloat);
  auto split_sq = torch::zeros({1}, options), whole_sq = torch::zeros({1}, options);
  for (const auto& p : params) {
    if (!p.grad().defined() || skipped.count(p.unsafeGetTensorImpl())) continue;
    auto& sum = is_split.count(p.unsafeGetTensorImpl()) ? split_sq : whole_sq;
    sum += p.grad().detach().to(torch::kFloat).square().sum();
  }
  if (split_group) split_group->all_reduce_sum(split_sq);
  auto total = split_sq + whole_sq;
  if (stages) stages->all_reduce_sum(total);
  return total.sqrt().reshape({});
}

}  // namespace xpuperf::parallel
