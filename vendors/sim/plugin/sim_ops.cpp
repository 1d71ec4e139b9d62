// The simulated accelerator's own kernels for two of xpuperf's operators (src/xpuperf/ops/
// operators.h): add_rms_norm and silu_mul, as a vendor registers its `csrc` operators for its
// device's key. They are registered for PrivateUse1 alone, so they are forward kernels: in training,
// where autograd records, xpuperf takes the composite operators instead (ops/operators.h), and
// `xpuperf vendor check sim` says which implementation each row ran. The arithmetic is plain loops
// in float over the device's memory (opened by a MemoryGuard), not ATen's kernels, so the check
// compares two implementations.

#include <ATen/ops/from_blob.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <tuple>

#include "sim_memory.h"

namespace xpuperf::sim {
namespace {

// A copy of t's values as a contiguous float CPU tensor (inside a MemoryGuard that holds t's memory):
// a copy even where t is float already, since the guard closes the memory again.
at::Tensor host_floats(const at::Tensor& t) {
  const auto host = at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(at::kCPU));
  return host.to(at::kFloat, /*non_blocking=*/false, /*copy=*/true).contiguous();
}

// Copies `values` (a float CPU tensor) into a new sim tensor of `like`'s device, `type` and shape.
at::Tensor to_device(const at::Tensor& values, const at::Tensor& like, at::ScalarType type) {
  auto out = at::empty(values.sizes(), like.options().dtype(type));
  MemoryGuard guard({out.storage().data()});
  at::from_blob(out.data_ptr(), out.sizes(), out.strides(), out.options().device(at::kCPU)).copy_(values.to(type));
  return out;
}

std::tuple<at::Tensor, at::Tensor> sim_add_rms_norm(const at::Tensor& x, const c10::optional<at::Tensor>& delta,
                                                    const at::Tensor& weight, double eps,
                                                    c10::optional<at::ScalarType> out_type) {
  const bool adds = delta.has_value() && delta->defined();
  at::Tensor sum_values, w;
  {
    MemoryGuard guard({x.storage().data(), weight.storage().data(), adds ? delta->storage().data() : nullptr});
    sum_values = host_floats(x);
    if (adds) sum_values = sum_values + host_floats(*delta);
    w = host_floats(weight);
  }
  // The sum rounds to x's type first, as the residual stream keeps it.
  sum_values = sum_values.to(x.scalar_type()).to(at::kFloat);
  auto out_values = at::empty_like(sum_values);
  const auto width = x.size(-1), rows = x.numel() / width;
  const float* s = sum_values.data_ptr<float>();
  const float* g = w.data_ptr<float>();
  float* o = out_values.data_ptr<float>();
  for (std::int64_t r = 0; r < rows; ++r) {
    double squares = 0;
    for (std::int64_t i = 0; i < width; ++i) squares += static_cast<double>(s[r * width + i]) * s[r * width + i];
    const float scale = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(width) + eps));
    for (std::int64_t i = 0; i < width; ++i) o[r * width + i] = s[r * width + i] * scale * g[i];
  }
  auto sum = adds ? to_device(sum_values, x, x.scalar_type()) : x;
  auto out = to_device(out_values, x, out_type.has_value() ? *out_type : x.scalar_type());
  return {std::move(sum), std::move(out)};
}

at::Tensor sim_silu_mul(const at::Tensor& gate_up) {
  at::Tensor values;
  {
    MemoryGuard guard({gate_up.storage().data()});
    values = host_floats(gate_up);
  }
  const auto width = gate_up.size(-1) / 2, rows = gate_up.numel() / gate_up.size(-1);
  auto sizes = gate_up.sizes().vec();
  sizes.back() = width;
  auto out_values = at::empty(sizes, values.options());
  const float* in = values.data_ptr<float>();
  float* o = out_values.data_ptr<float>();
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < width; ++i) {
      const float gate = in[r * 2 * width + i], up = in[r * 2 * width + width + i];
      o[r * width + i] = gate / (1.0f + std::exp(-gate)) * up;
    }
  return to_device(out_values, gate_up, gate_up.scalar_type());
}

}  // namespace
}  // namespace xpuperf::sim

TORCH_LIBRARY_IMPL(xpuperf, PrivateUse1, m) {
  m.impl("add_rms_norm", &xpuperf::sim::sim_add_rms_norm);
  m.impl("silu_mul", &xpuperf::sim::sim_silu_mul);
}
