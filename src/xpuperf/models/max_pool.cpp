#include "xpuperf/models/max_pool.h"

#include "xpuperf/ops/composite.h"

namespace xpuperf::models::fused {

torch::Tensor max_pool2d(const torch::Tensor& x, std::int64_t kernel, std::int64_t stride, std::int64_t padding,
                         bool use_kernels) {
  return use_kernels ? ops::max_pool2d(x, kernel, stride, padding)
                     : ops::composite::max_pool2d(x, kernel, stride, padding);
}

}  // namespace xpuperf::models::fused
