#include <stdexcept>

#include "xpuperf/infer/inference_case.h"

namespace xpuperf::infer {

Batches Batches::in_memory(const torch::Tensor& inputs, const torch::Tensor& labels, std::int64_t batch_size,
                           std::string description) {
  if (batch_size <= 0) throw std::runtime_error("batch_size must be positive");
  Batches b;
  b.samples = inputs.size(0);
  b.batch_size = batch_size;
  b.count = static_cast<std::size_t>((b.samples + batch_size - 1) / batch_size);
  b.sample_shape.assign(inputs.sizes().begin() + 1, inputs.sizes().end());
  b.sample_dtype = inputs.scalar_type();
  b.description = std::move(description);
  b.load = [inputs, labels, batch_size, samples = b.samples](std::size_t i) {
    const std::int64_t at = static_cast<std::int64_t>(i) * batch_size;
    const std::int64_t end = std::min(at + batch_size, samples);
    return Batch{inputs.slice(0, at, end).contiguous(), labels.slice(0, at, end).contiguous()};
  };
  return b;
}

std::vector<std::int64_t> Batches::batch_sizes() const {
  std::vector<std::int64_t> sizes;
  if (samples >= batch_size) sizes.push_back(batch_size);
  if (samples % batch_size != 0) sizes.push_back(samples % batch_size);
  return sizes;
}

}  // namespace xpuperf::infer
