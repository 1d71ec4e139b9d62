// computation-BF16 on the CPU through LibTorch's matmul (oneDNN: AVX512-BF16 / AMX where the CPU
// has them), which Debian's OpenBLAS cannot do. Same inputs and check as the other GEMMs
// (gemm_check.h): C = A B^T with A, B row-major m x k and n x k (the column-major A^T B).

#include <torch/torch.h>

#include <stdexcept>
#include <thread>

#include "xpuperf/base/base_benchmark.h"
#include "xpuperf/base/gemm_check.h"

namespace xpuperf::base {

namespace {

torch::Tensor levels_tensor(std::int64_t size, std::uint32_t seed) {
  std::vector<float> values(static_cast<std::size_t>(size * size));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(gemm_level(i, seed) / 8.0);
  return torch::from_blob(values.data(), {size, size}, torch::kFloat32).to(torch::kBFloat16);  // copies
}

class TorchCpuBf16Gemm : public BaseBenchmark {
 public:
  std::string filter(const BaseContext&) override { return ""; }

  BaseResult run(const BaseContext& ctx) override {
    const GemmPrecision* p = gemm_precision(ctx.metric);
    const int threads = static_cast<int>(ctx.config.get_int("cpu_threads"));
    torch::set_num_threads(threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency()));
    const std::int64_t size = ctx.config.get_int("cpu_size");
    const torch::NoGradGuard no_grad;
    const torch::Tensor a = levels_tensor(size, 1), bt = levels_tensor(size, 2).t();
    torch::Tensor c = torch::empty({size, size}, torch::kBFloat16);
    BaseResult r = time_and_check_host_gemm(
        *p, ctx.config, size, [&] { torch::mm_out(c, a, bt); },
        [&](std::int64_t i, std::int64_t j) { return c[i][j].to(torch::kFloat64).item<double>(); });
    r.implementation = "LibTorch mm (bfloat16), " + std::to_string(torch::get_num_threads()) + " threads";
    return r;
  }
};

XPUPERF_REGISTER_BASE("computation-BF16", "cpu", TorchCpuBf16Gemm);

}  // namespace

}  // namespace xpuperf::base
