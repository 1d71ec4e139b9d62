#include "xpuperf/parallel/parallel_linear.h"

#include <stdexcept>
#include <string>

#include "xpuperf/torchrt/init.h"

namespace xpuperf::parallel {

std::vector<torch::Tensor> split_parameters_of(torch::nn::Module& model) {
  std::vector<torch::Tensor> split;
  for (const auto& module : model.modules()) {
    if (const auto* layer = dynamic_cast<const TensorParallelLayer*>(module.get())) {
      const auto parts = layer->split_parameters();
      split.insert(split.end(), parts.begin(), parts.end());
    }
  }
  return split;
}

torch::Tensor tensor_part(const torch::Tensor& t, std::int64_t dim, const TensorParallel& tp, std::int64_t blocks) {
  const std::int64_t block = t.size(dim) / blocks, parts = tp.size();
  if (t.size(dim) % blocks != 0 || block % parts != 0)
    throw std::invalid_argument("tensor_parallel " + std::to_string(parts) + " does not divide " +
                                std::to_string(block) + " features");
  const std::int64_t part = block / parts;
  std::vector<torch::Tensor> kept;
  for (std::int64_t j = 0; j < blocks; ++j) kept.push_back(t.narrow(dim, j * block + tp.rank() * part, part));
  return torch::cat(kept, dim).contiguous();
}

namespace {

void keep_part(torch::Tensor& parameter, std::int64_t dim, const TensorParallel& tp, std::int64_t blocks = 1) {
  torch::NoGradGuard no_grad;
  parameter.set_data(tensor_part(parameter, dim, tp, blocks));
}

std::vector<torch::Tensor> if_split(const std::shared_ptr<TensorParallel>& tp, std::vector<torch::Tensor> parameters) {
  if (!tp) return {};
  std::vector<torch::Tensor> defined;
  for (auto& p : parameters)
    if (p.defined()) defined.push_back(p);
  return defined;
}

}  // namespace

torch::Tensor column_parallel_linear(TensorParallel* tp, const torch::Tensor& x, const torch::Tensor& weight,
                                     const torch::Tensor& bias) {
  return tp ? tp->column_linear(x, weight, bias) : torch::linear(x, weight, bias);
}

bool joinable(std::initializer_list<const ColumnParallelLinear*> layers) {
  const auto* group = (**layers.begin())->group();
  for (const auto* l : layers)
    if ((*l)->has_adapter() || (*l)->group() != group) return false;
  return true;
}

torch::Tensor ColumnParallelLinearImpl::forward(const torch::Tensor& x) {
  return adapted(x, column_parallel_linear(tp_.get(), x, weight, bias), is_training());
}

void ColumnParallelLinearImpl::split(std::shared_ptr<TensorParallel> tp, std::int64_t blocks) {
  keep_part(weight, 0, *tp, blocks);
  if (bias.defined()) keep_part(bias, 0, *tp, blocks);
  tp_ = std::move(tp);
}

std::vector<torch::Tensor> ColumnParallelLinearImpl::split_parameters() const {
  return if_split(tp_, {weight, bias});
}

torch::Tensor RowParallelLinearImpl::forward(const torch::Tensor& x) {
  if (!tp_) return adapted(x, torch::linear(x, weight, bias), is_training());
  const auto sum = tp_->reduce_out(torch::linear(x, weight));
  return bias.defined() ? sum + whole_parameter(tp_.get(), bias) : sum;
}

void RowParallelLinearImpl::split(std::shared_ptr<TensorParallel> tp) {
  keep_part(weight, 1, *tp);
  tp_ = std::move(tp);
}

std::vector<torch::Tensor> RowParallelLinearImpl::split_parameters() const {
  return if_split(tp_, {weight});  // the bias stays whole, added once after the sum
}

Conv1DImpl::Conv1DImpl(std::int64_t in, std::int64_t out, double init_std, Conv1DSplit splits) : splits_(splits) {
  weight = register_parameter("weight", torch::empty({in, out}));
  bias = register_parameter("bias", torch::zeros({out}));
  torchrt::init_normal(weight, 0.0, init_std);
}

torch::Tensor Conv1DImpl::forward(const torch::Tensor& x) {
  auto sizes = x.sizes().vec();
  sizes.back() = weight.size(1);
  if (tp_ && splits_ == Conv1DSplit::Rows)
    return tp_->reduce_out(x.reshape({-1, x.size(-1)}).mm(weight).view(sizes)) + whole_parameter(tp_.get(), bias);
  if (tp_ && !has_adapter()) return tp_->column_linear(x, weight.t(), bias);
  const auto in = tp_ ? tp_->copy_in(x) : x;
  return adapted(in, torch::addmm(bias, in.reshape({-1, in.size(-1)}), weight).view(sizes), is_training());
}

void Conv1DImpl::split(std::shared_ptr<TensorParallel> tp, std::int64_t blocks) {
  if (splits_ == Conv1DSplit::Columns) {
    keep_part(weight, 1, *tp, blocks);
    keep_part(bias, 0, *tp, blocks);
  } else {
    keep_part(weight, 0, *tp);
  }
  tp_ = std::move(tp);
}

std::vector<torch::Tensor> Conv1DImpl::split_parameters() const {
  return if_split(tp_, splits_ == Conv1DSplit::Columns ? std::vector<torch::Tensor>{weight, bias}
                                                       : std::vector<torch::Tensor>{weight});
}

torch::Tensor VocabParallelEmbeddingImpl::forward(const torch::Tensor& ids) {
  if (!tp_) return EmbeddingImpl::forward(ids);
  const auto rows = weight.size(0);
  const auto local = ids - first_row_;
  const auto outside = (local < 0).logical_or(local >= rows);
  auto looked_up = torch::embedding(weight, local.masked_fill(outside, 0));
  looked_up = looked_up.masked_fill(outside.unsqueeze(-1), 0.0);
  return tp_->reduce_out(looked_up);
}

void VocabParallelEmbeddingImpl::split(std::shared_ptr<TensorParallel> tp) {
  first_row_ = weight.size(0) / tp->size() * tp->rank();
  keep_part(weight, 0, *tp);
  tp_ = std::move(tp);
}

std::vector<torch::Tensor> VocabParallelEmbeddingImpl::split_parameters() const {
  return if_split(tp_, {weight});
}

}  // namespace xpuperf::parallel
