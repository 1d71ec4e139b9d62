#pragma once
// Megatron-LM's parallel layer types, so that a model writes its attention and MLP once and they run
// whole or split over a tensor-parallel group (parallel/tensor_parallel.h):
//   column-parallel  each rank keeps 1/T of the output features (weight rows, bias); the input
//                    comes in whole through copy_in, the output leaves as this rank's part;
//   row-parallel     each rank keeps 1/T of the input features (weight columns); the partial
//                    products are summed over the group (reduce_out), then the whole bias added
//                    (with sequence parallelism to a rank's tokens: its gradient summed over the group);
//   vocabulary-parallel embedding  each rank keeps 1/T of the rows; a token outside a rank's rows
//                    looks up zeros there, and the sum over the group is the whole lookup.
// Before split() a layer is exactly the layer it extends (the same operators, initialisation and
// parameter names), so an unsplit model's numbers and checkpoints do not change. Each can also carry
// a LoRA adapter (lora.h), added to its output.

#include <torch/torch.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "xpuperf/parallel/lora.h"
#include "xpuperf/parallel/tensor_parallel.h"

namespace xpuperf::parallel {

// A layer that split() divided over a tensor-parallel group: the parameters each rank holds a
// different part of (what the gradient norm sums over the group). Empty while whole.
class TensorParallelLayer {
 public:
  virtual ~TensorParallelLayer() = default;
  virtual std::vector<torch::Tensor> split_parameters() const = 0;
};

// Every split parameter of `model`'s TensorParallelLayers.
std::vector<torch::Tensor> split_parameters_of(torch::nn::Module& model);

// This rank's 1/T of `t` along `dim`, taken from each of `blocks` equal blocks (q, k and v packed in
// one weight are three blocks: a rank keeps its heads of each). std::invalid_argument when a block
// does not divide by T.
torch::Tensor tensor_part(const torch::Tensor& t, std::int64_t dim, const TensorParallel& tp, std::int64_t blocks = 1);

// torch::linear(x, weight, bias) of a column-parallel part (weight: this rank's rows): x enters
// through tp's copy_in; tp null: the whole layer. For a model whose weights are not a Linear module
// of their own (torch.nn.MultiheadAttention's packed in_proj).
torch::Tensor column_parallel_linear(TensorParallel* tp, const torch::Tensor& x, const torch::Tensor& weight,
                                     const torch::Tensor& bias);

// torch::nn::Linear (weight stored out × in) whose output features split.
class ColumnParallelLinearImpl : public torch::nn::LinearImpl, public TensorParallelLayer, public LowRankAdaptable {
 public:
  using torch::nn::LinearImpl::LinearImpl;
  torch::Tensor forward(const torch::Tensor& x);
  std::int64_t adapter_in() const override { return weight.size(1); }
  std::int64_t adapter_out() const override { return weight.size(0); }
  // Keeps this rank's output features of each of `blocks`.
  void split(std::shared_ptr<TensorParallel> tp, std::int64_t blocks = 1);
  std::vector<torch::Tensor> split_parameters() const override;
  bool is_split() const { return tp_ != nullptr; }
  // The group it is split over (null: whole). Layers that read one input and share a group may run
  // as one product after one copy_in (one all-reduce of the input's gradient instead of one each).
  TensorParallel* group() const { return tp_.get(); }

 private:
  std::shared_ptr<TensorParallel> tp_;
};
TORCH_MODULE(ColumnParallelLinear);

// Whether layers that read one input can run as one product of their joined weights: none has an
// adapter, and all are whole or split over the same group (then one copy_in, one sum of the input's
// gradient).
bool joinable(std::initializer_list<const ColumnParallelLinear*> layers);

// torch::nn::Linear (weight stored out × in) whose input features split.
class RowParallelLinearImpl : public torch::nn::LinearImpl, public TensorParallelLayer, public LowRankAdaptable {
 public:
  using torch::nn::LinearImpl::LinearImpl;
  torch::Tensor forward(const torch::Tensor& x);
  std::int64_t adapter_in() const override { return weight.size(1); }
  std::int64_t adapter_out() const override { return weight.size(0); }
  void split(std::shared_ptr<TensorParallel> tp);
  std::vector<torch::Tensor> split_parameters() const override;
  bool is_split() const { return tp_ != nullptr; }

 private:
  std::shared_ptr<TensorParallel> tp_;
};
TORCH_MODULE(RowParallelLinear);

// Which features of a Conv1D split.
enum class Conv1DSplit { Columns, Rows };

// x W + b with W stored (in, out), as GPT-2's checkpoints have it (Hugging Face's "Conv1D"),
// initialised normal(0, init_std) with a zero bias; column- or row-parallel once split.
class Conv1DImpl : public torch::nn::Module, public TensorParallelLayer, public LowRankAdaptable {
 public:
  Conv1DImpl(std::int64_t in, std::int64_t out, double init_std, Conv1DSplit splits);
  torch::Tensor forward(const torch::Tensor& x);
  std::int64_t adapter_in() const override { return weight.size(0); }
  std::int64_t adapter_out() const override { return weight.size(1); }
  bool fan_in_fan_out() const override { return true; }
  void split(std::shared_ptr<TensorParallel> tp, std::int64_t blocks = 1);
  std::vector<torch::Tensor> split_parameters() const override;
  std::int64_t in_features() const { return weight.size(0); }
  bool is_split() const { return tp_ != nullptr; }
  torch::Tensor weight, bias;

 private:
  Conv1DSplit splits_;
  std::shared_ptr<TensorParallel> tp_;
};
TORCH_MODULE(Conv1D);

// torch::nn::Embedding whose rows (the vocabulary) split.
class VocabParallelEmbeddingImpl : public torch::nn::EmbeddingImpl, public TensorParallelLayer {
 public:
  using torch::nn::EmbeddingImpl::EmbeddingImpl;
  torch::Tensor forward(const torch::Tensor& ids);
  void split(std::shared_ptr<TensorParallel> tp);
  std::vector<torch::Tensor> split_parameters() const override;

 private:
  std::shared_ptr<TensorParallel> tp_;
  std::int64_t first_row_ = 0;
};
TORCH_MODULE(VocabParallelEmbedding);

}  // namespace xpuperf::parallel
