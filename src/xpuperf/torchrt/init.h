#pragma once
// Random initialisation that does not take minutes for a large model. ATen's normal_ on the host
// draws every value from the one default generator on one thread (about 3 ns a value), so a
// Llama-3-8B built on the host spent most of a minute in it, once for each initialisation pass.

#include <torch/torch.h>

namespace xpuperf::torchrt {

// Fills `t` in place with normal(mean, std) values, as torch::nn::init::normal_ does. A contiguous
// host tensor of at least kParallelInitElements values is filled in pieces on the rank's threads,
// each piece from a generator of its own seeded from one draw of the default generator: the values
// follow torch::manual_seed and do not depend on the number of threads. Smaller tensors, and those
// on a device, are filled as torch::nn::init::normal_ fills them (the same values).
void init_normal(const torch::Tensor& t, double mean, double std);

// Below this, a tensor takes its values straight from the default generator, so that small models
// (the CPU tests') keep the values they always had.
inline constexpr std::int64_t kParallelInitElements = std::int64_t{1} << 22;

// A Linear (torch::nn::Linear, or a layer type built as one) initialised as Hugging Face's models
// are: weight normal(0, std), bias (where it has one) zero. LibTorch's Linear draws Kaiming-uniform
// values into its weight when built, on one thread (a fifth of a minute for Llama-3-8B), only for them
// to be drawn again: a layer of kParallelInitElements weights or more is built 1 × 1 and then given
// its shape, so that its one pass runs on all cores. Smaller layers keep both passes, and with them
// the values the CPU tests' models always had.
template <typename Layer = torch::nn::Linear>
Layer normal_linear(std::int64_t in, std::int64_t out, bool bias, double std) {
  const auto options = torch::nn::LinearOptions(in, out).bias(bias);
  const bool large = in * out >= kParallelInitElements;
  Layer l(large ? torch::nn::LinearOptions(1, 1).bias(bias) : options);
  if (large) {
    l->options = options;
    l->weight.set_data(torch::empty({out, in}));
    if (bias) l->bias.set_data(torch::empty({out}));
  }
  init_normal(l->weight, 0.0, std);
  if (bias) torch::nn::init::zeros_(l->bias);
  return l;
}

// An Embedding (torch::nn::Embedding, or a layer type built as one) initialised normal(0, std) as
// Hugging Face's models are. LibTorch's Embedding draws normal(0, 1) values into its table when built,
// on one thread (10.4 s for Llama-3-8B's 525 M on a 2-core Intel Xeon), only to be drawn again: a table of
// kParallelInitElements values or more is built 1 × 1 and then given its shape, as normal_linear does.
template <typename Layer = torch::nn::Embedding>
Layer normal_embedding(std::int64_t count, std::int64_t dim, double std) {
  const auto options = torch::nn::EmbeddingOptions(count, dim);
  const bool large = count * dim >= kParallelInitElements;
  Layer e(large ? torch::nn::EmbeddingOptions(1, 1) : options);
  if (large) {
    e->options = options;
    e->weight.set_data(torch::empty({count, dim}));
  }
  init_normal(e->weight, 0.0, std);
  return e;
}

}  // namespace xpuperf::torchrt
