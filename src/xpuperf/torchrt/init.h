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

}  // namespace xpuperf::torchrt
