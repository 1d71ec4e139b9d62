// computation-{FP64,FP32} on the CPU: dense GEMM through OpenBLAS (dgemm, sgemm), C = A^T B in
// the layout of gemm_check.h. (Debian's OpenBLAS has no bfloat16: BF16 goes through LibTorch,
// torch_gemm.cpp.)

#include <cblas.h>

#include <stdexcept>
#include <thread>

#include "xpuperf/base/base_benchmark.h"
#include "xpuperf/base/gemm_check.h"

namespace xpuperf::base {

namespace {

template <typename T>
std::vector<T> levels_as(std::int64_t count, std::uint32_t seed) {
  std::vector<T> out(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<T>(gemm_level(static_cast<std::uint64_t>(i), seed) / 8.0);
  return out;
}

template <typename T>
void blas_gemm(blasint size, const T* a, const T* b, T* c) {
  if constexpr (std::is_same_v<T, double>)
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, size, size, size, 1.0, a, size, b, size, 0.0, c, size);
  else
    cblas_sgemm(CblasColMajor, CblasTrans, CblasNoTrans, size, size, size, 1.0f, a, size, b, size, 0.0f, c, size);
}

template <typename T>
BaseResult run_blas(const GemmPrecision& p, const Config& config, std::int64_t size) {
  const auto a = levels_as<T>(size * size, 1), b = levels_as<T>(size * size, 2);
  std::vector<T> c(static_cast<std::size_t>(size * size));
  const auto n = static_cast<blasint>(size);
  return time_and_check_host_gemm(
      p, config, size, [&] { blas_gemm<T>(n, a.data(), b.data(), c.data()); },
      [&](std::int64_t i, std::int64_t j) { return static_cast<double>(c[static_cast<std::size_t>(i + j * size)]); });
}

class CpuGemm : public BaseBenchmark {
 public:
  std::string filter(const BaseContext&) override { return ""; }

  BaseResult run(const BaseContext& ctx) override {
    const GemmPrecision* p = gemm_precision(ctx.metric);
    if (!p) throw std::runtime_error("unknown precision in " + ctx.metric);
    const int threads = static_cast<int>(ctx.config.get_int("cpu_threads"));
    openblas_set_num_threads(threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency()));
    const std::int64_t size = ctx.config.get_int("cpu_size");
    BaseResult r = p->name == "FP64" ? run_blas<double>(*p, ctx.config, size) : run_blas<float>(*p, ctx.config, size);
    r.implementation = std::string("OpenBLAS ") + (p->name == "FP64" ? "dgemm" : "sgemm") + ", " +
                       std::to_string(openblas_get_num_threads()) + " threads";
    return r;
  }
};

XPUPERF_REGISTER_BASE("computation-FP64", "cpu", CpuGemm);
XPUPERF_REGISTER_BASE("computation-FP32", "cpu", CpuGemm);

}  // namespace

}  // namespace xpuperf::base
