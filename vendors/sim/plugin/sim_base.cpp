// The sim vendor's own implementation of a base case, registered under the vendor's name beside
// the vendor-neutral one (backend torch): what a vendor's hand-written kernels are to PyTorch's
// primitives. main_memory-bandwidth: BabelStream's four kernels as loops over the device's memory,
// opened for them as a kernel's would be. The sim device computes with the host's cores, so it
// takes the CPU's array size (cpu_array_mib).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "sim_engine.h"
#include "sim_memory.h"
#include "xpuperf/base/base_benchmark.h"
#include "xpuperf/base/stream_kernels.h"

namespace xpuperf::base {
// Weak, as the engine's registration is (sim_engine.cpp): a process without the base cases (a test
// binary of the runtime alone) loads the plug-in without them.
bool register_base(const std::string& metric, const std::string& backend, BaseFactory factory) __attribute__((weak));
}  // namespace xpuperf::base

namespace xpuperf::sim {
namespace {

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class SimBandwidth : public base::BaseBenchmark {
 public:
  std::string filter(const base::BaseContext&) override { return ""; }

  base::BaseResult run(const base::BaseContext& ctx) override {
    const auto n = static_cast<std::size_t>(ctx.config.get_int("cpu_array_mib")) * (1 << 20) / sizeof(double);
    const std::size_t bytes = n * sizeof(double);
    auto* a = static_cast<double*>(allocate_block(bytes));
    auto* b = static_cast<double*>(allocate_block(bytes));
    auto* c = static_cast<double*>(allocate_block(bytes));
    const double scalar = base::kStreamScalar;
    const auto repeats = ctx.config.get_int("repeats");
    std::vector<base::StreamKernel> kernels = base::stream_kernels(static_cast<double>(bytes));
    const base::StreamExpected expected = base::stream_expected(repeats);
    const double expected_sum = expected.read_sum_per_element * static_cast<double>(n);
    double sink = 0;
    base::BaseResult r;
    {
      MemoryGuard guard({a, b, c});
      std::fill(a, a + n, 1.0);
      std::fill(b, b + n, 2.0);
      std::fill(c, c + n, 0.0);
      r.started_unix = unix_now();
      for (std::int64_t rep = 0; rep < repeats; ++rep)
        for (auto& k : kernels) {
          const double t0 = seconds_now();
          if (k.name == "read") {
            double sum = 0;
            for (std::size_t i = 0; i < n; ++i) sum += a[i];
            sink += sum;
          } else if (k.name == "write") {
            std::fill(c, c + n, scalar);
          } else if (k.name == "copy") {
            std::memcpy(c, a, bytes);
          } else {
            for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + scalar * c[i];
          }
          k.rates.push_back(k.bytes / (seconds_now() - t0) / 1e9);
        }
      r.ended_unix = unix_now();
      int wrong = 0;
      for (std::size_t i = 0; i < n; i += std::max<std::size_t>(1, n / 4096))
        if (std::abs(a[i] - expected.a) > 1e-12 * expected.a || std::abs(c[i] - expected.c) > 1e-12 * expected.c)
          ++wrong;
      const bool sums = std::abs(sink - expected_sum) <= 1e-9 * expected_sum;
      r.correct = wrong == 0 && sums;
      r.check = std::to_string(wrong) + " wrong of 4096 sampled elements after the last triad; read sums " +
                (sums ? "match" : "DIFFER");
    }
    free_block(a);
    free_block(b);
    free_block(c);
    base::add_stream_figures(kernels, {"read", "copy", "triad"}, r);
    r.implementation = "the sim plug-in's own loops over its device memory (one host thread)";
    return r;
  }
};

}  // namespace

void register_base_cases() {
  if (!&base::register_base) return;
  base::register_base("main_memory-bandwidth", "sim", [] { return std::make_unique<SimBandwidth>(); });
}

}  // namespace xpuperf::sim
