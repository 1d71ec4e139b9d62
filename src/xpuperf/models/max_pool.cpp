#include "xpuperf/models/max_pool.h"

#ifdef XPUPERF_HAVE_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>

#include "xpuperf/models/cuda/kernel_tensors.h"
#include "xpuperf/models/cuda/max_pool_kernels.h"
#endif

namespace xpuperf::models::fused {

#ifdef XPUPERF_HAVE_TORCH_CUDA
namespace {

kernels::MaxPoolShape shape_of(const torch::Tensor& x, std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
  kernels::MaxPoolShape s;
  s.batch = x.size(0), s.channels = x.size(1), s.height = x.size(2), s.width = x.size(3);
  s.kernel = static_cast<int>(kernel), s.stride = static_cast<int>(stride), s.padding = static_cast<int>(padding);
  return s;
}

// The kernels as one autograd function; kept for backward: the winners (a byte an output element).
struct KernelMaxPool : torch::autograd::Function<KernelMaxPool> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, std::int64_t kernel,
                               std::int64_t stride, std::int64_t padding) {
    kernels::Element e{};
    kernels::element_of(x, e);
    const c10::cuda::CUDAGuard guard(x.device());
    const auto s = shape_of(x, kernel, stride, padding);
    const auto layout = torch::MemoryFormat::ChannelsLast;
    auto y = torch::empty({s.batch, s.channels, s.out_height(), s.out_width()}, x.options().memory_format(layout));
    auto winner = torch::empty_like(y, y.options().dtype(torch::kByte), layout);
    kernels::check(kernels::max_pool_forward(e, x.data_ptr(), y.data_ptr(), winner.data_ptr<std::uint8_t>(), s,
                                             kernels::stream_of(x)),
                   "max_pool_forward");
    ctx->save_for_backward({winner});
    ctx->saved_data["sizes"] = x.sizes().vec();
    ctx->saved_data["window"] = std::vector<std::int64_t>{kernel, stride, padding};
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    if (!grads[0].defined()) return torch::autograd::variable_list(4);  // the output went unused: no gradient
    const auto winner = ctx->get_saved_variables()[0];
    const auto sizes = ctx->saved_data["sizes"].toIntVector();
    const auto window = ctx->saved_data["window"].toIntVector();
    const auto layout = torch::MemoryFormat::ChannelsLast;
    kernels::Element e{};
    const auto grad_y = grads[0].contiguous(layout);
    kernels::element_of(grad_y, e);
    const c10::cuda::CUDAGuard guard(grad_y.device());
    auto grad_x = torch::empty(sizes, grad_y.options().memory_format(layout));
    const auto s = shape_of(grad_x, window[0], window[1], window[2]);
    kernels::check(kernels::max_pool_backward(e, grad_y.data_ptr(), winner.data_ptr<std::uint8_t>(), grad_x.data_ptr(),
                                              s, kernels::stream_of(grad_y)),
                   "max_pool_backward");
    return {grad_x, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// A 4-d channels-last CUDA tensor of the kernels' types with whole packs of channels, a window the
// kernels take (at most 256 positions, the padding at most half of it).
bool kernels_take(const torch::Tensor& x, std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
  kernels::Element e{};
  return x.dim() == 4 && x.is_cuda() && kernels::element_of(x, e) &&
         x.is_contiguous(torch::MemoryFormat::ChannelsLast) && kernels::aligned(x) &&
         x.size(1) % kernels::pack_elements(e) == 0 && kernel >= 1 && kernel * kernel <= 256 && stride >= 1 &&
         padding >= 0 && 2 * padding <= kernel && x.size(2) + 2 * padding >= kernel &&
         x.size(3) + 2 * padding >= kernel && x.numel() > 0;
}

}  // namespace
#endif

torch::Tensor max_pool2d(const torch::Tensor& x, std::int64_t kernel, std::int64_t stride, std::int64_t padding,
                         [[maybe_unused]] bool use_kernels) {
#ifdef XPUPERF_HAVE_TORCH_CUDA
  if (use_kernels && kernels_take(x, kernel, stride, padding)) return KernelMaxPool::apply(x, kernel, stride, padding);
#endif
  return torch::max_pool2d(x, kernel, stride, padding);
}

}  // namespace xpuperf::models::fused
