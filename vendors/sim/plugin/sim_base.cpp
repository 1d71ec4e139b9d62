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
    const double scalar = 0.4;
    const auto repeats = ctx.config.get_int("repeats");
    std::vector<double> read, write, copy, triad;
    double sink = 0, ea = 1.0, ec = 0.0;
    base::BaseResult r;
    {
      MemoryGuard guard({a, b, c});
      std::fill(a, a + n, 1.0);
      std::fill(b, b + n, 2.0);
      std::fill(c, c + n, 0.0);
      r.started_unix = unix_now();
      const auto rate = [](double moved, double t0) { return moved / (seconds_now() - t0) / 1e9; };
      for (std::int64_t rep = 0; rep < repeats; ++rep) {
        double t0 = seconds_now(), sum = 0;
        for (std::size_t i = 0; i < n; ++i) sum += a[i];
        read.push_back(rate(static_cast<double>(bytes), t0));
        sink += sum;
        t0 = seconds_now();
        std::fill(c, c + n, scalar);
        write.push_back(rate(static_cast<double>(bytes), t0));
        t0 = seconds_now();
        std::memcpy(c, a, bytes);
        copy.push_back(rate(2.0 * static_cast<double>(bytes), t0));
        t0 = seconds_now();
        for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + scalar * c[i];
        triad.push_back(rate(3.0 * static_cast<double>(bytes), t0));
        ec = ea;
        ea = 2.0 + scalar * ec;
      }
      r.ended_unix = unix_now();
      int wrong = 0;
      for (std::size_t i = 0; i < n; i += std::max<std::size_t>(1, n / 4096))
        if (std::abs(a[i] - ea) > 1e-12 * ea || std::abs(c[i] - ec) > 1e-12 * ec) ++wrong;
      r.correct = wrong == 0 && std::isfinite(sink);
      r.check = std::to_string(wrong) + " wrong of 4096 sampled elements after the last triad";
    }
    free_block(a);
    free_block(b);
    free_block(c);
    r.figures = {{"triad best", base::best_of(triad), "GB/s", "memory_bandwidth_gbps"},
                 {"triad median", base::median_of(triad), "GB/s", ""},
                 {"read best", base::best_of(read), "GB/s", "memory_bandwidth_gbps"},
                 {"read median", base::median_of(read), "GB/s", ""},
                 {"write best", base::best_of(write), "GB/s", ""},
                 {"write median", base::median_of(write), "GB/s", ""},
                 {"copy best", base::best_of(copy), "GB/s", "memory_bandwidth_gbps"},
                 {"copy median", base::median_of(copy), "GB/s", ""}};
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
