#include "xpuperf/torchrt/init.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <limits>

#include "xpuperf/core/parallel.h"

namespace xpuperf::torchrt {

namespace {
constexpr std::int64_t kPiece = std::int64_t{1} << 20;  // values a generator fills
}

void init_normal(const torch::Tensor& t, double mean, double std) {
  const torch::NoGradGuard no_grad;
  const std::int64_t n = t.numel();
  if (!t.device().is_cpu() || !t.is_contiguous() || n < kParallelInitElements) {
    t.normal_(mean, std);
    return;
  }
  // One draw from the default generator, so that torch::manual_seed decides every piece.
  const auto base = static_cast<std::uint64_t>(
      torch::randint(std::numeric_limits<std::int64_t>::max(), {1}, torch::kLong).item<std::int64_t>());
  const auto flat = t.view({-1});
  const auto pieces = static_cast<std::size_t>((n + kPiece - 1) / kPiece);
  parallel_items(pieces, std::max(1, at::get_num_threads()), [&](std::size_t i, int) {
    const torch::NoGradGuard piece_no_grad;  // grad mode is a thread's own
    const auto start = static_cast<std::int64_t>(i) * kPiece;
    auto generator = at::make_generator<at::CPUGeneratorImpl>(base + i);
    flat.narrow(0, start, std::min(kPiece, n - start)).normal_(mean, std, generator);
  });
}

}  // namespace xpuperf::torchrt
