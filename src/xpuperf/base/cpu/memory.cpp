// main_memory-bandwidth and main_memory-capacity on the CPU. Bandwidth: BabelStream's kernels
// over arrays of doubles (read = a sum, write, copy, triad a = b + s*c) on every core with OpenMP,
// best and median of `repeats`; bytes counted as the kernel reads plus writes. Capacity: the most
// memory a sequence of chunk allocations can hold, every page touched, up to a limit.

#include <omp.h>
#include <sys/mman.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "xpuperf/base/base_benchmark.h"
#include "xpuperf/base/stream_kernels.h"
#include "xpuperf/core/host_memory.h"

namespace xpuperf::base {

namespace {

class CpuBandwidth : public BaseBenchmark {
 public:
  std::string filter(const BaseContext&) override { return ""; }

  BaseResult run(const BaseContext& ctx) override {
    const int threads = static_cast<int>(ctx.config.get_int("cpu_threads"));
    if (threads > 0) omp_set_num_threads(threads);
    const auto n = static_cast<std::size_t>(ctx.config.get_int("cpu_array_mib")) * (1 << 20) / sizeof(double);
    std::vector<double> a(n), b(n), c(n);
    const auto sn = static_cast<std::int64_t>(n);
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < sn; ++i) a[i] = 1.0, b[i] = 2.0, c[i] = 0.0;  // first touch by the user thread

    const double bytes = static_cast<double>(n * sizeof(double));
    const double scalar = kStreamScalar;
    double sink = 0;
    std::vector<StreamKernel> kernels = stream_kernels(bytes);
    BaseResult r;
    r.started_unix = unix_seconds();
    for (int rep = 0; rep < ctx.config.get_int("repeats"); ++rep) {
      for (auto& k : kernels) {
        const double t0 = steady_seconds();
        const std::string& name = k.name;
        if (name == "read") {
          double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
          for (std::int64_t i = 0; i < sn; ++i) sum += a[i];
          sink += sum;
        } else if (name == "write") {
#pragma omp parallel for schedule(static)
          for (std::int64_t i = 0; i < sn; ++i) c[i] = scalar;
        } else if (name == "copy") {
#pragma omp parallel for schedule(static)
          for (std::int64_t i = 0; i < sn; ++i) c[i] = a[i];
        } else {
#pragma omp parallel for schedule(static)
          for (std::int64_t i = 0; i < sn; ++i) a[i] = b[i] + scalar * c[i];
        }
        k.rates.push_back(k.bytes / (steady_seconds() - t0) / 1e9);
      }
    }
    r.ended_unix = unix_seconds();
    const StreamExpected expected = stream_expected(ctx.config.get_int("repeats"));
    const double ea = expected.a, ec = expected.c;
    const double expected_sum = expected.read_sum_per_element * static_cast<double>(n);
    int wrong = 0;
    for (std::size_t i = 0; i < n; i += std::max<std::size_t>(1, n / 4096))
      if (std::abs(a[i] - ea) > 1e-12 * ea || std::abs(c[i] - ec) > 1e-12 * ec) ++wrong;
    r.correct = wrong == 0 && std::abs(sink - expected_sum) <= 1e-9 * expected_sum;
    r.check = std::to_string(wrong) + " wrong of 4096 sampled elements after the last triad; read sums " +
              (std::abs(sink - expected_sum) <= 1e-9 * expected_sum ? "match" : "DIFFER");
    r.implementation = "OpenMP, " + std::to_string(omp_get_max_threads()) + " threads, 3 arrays of " +
                       std::to_string(ctx.config.get_int("cpu_array_mib")) + " MiB";
    add_stream_figures(kernels, {}, r);  // the cpu vendor has no datasheet bandwidth
    return r;
  }
};

class CpuCapacity : public BaseBenchmark {
 public:
  std::string filter(const BaseContext&) override { return ""; }

  BaseResult run(const BaseContext& ctx) override {
    const double chunk = static_cast<double>(ctx.config.get_int("cpu_chunk_mib")) * (1 << 20);
    // The limit keeps the host alive: without one, the kernel's OOM killer picks a victim.
    double limit = ctx.config.get_number("cpu_limit_gib") * (1 << 30);
    const auto available = static_cast<double>(host_memory_available_bytes());
    if (limit <= 0) limit = 0.9 * available;
    std::vector<std::pair<void*, std::size_t>> chunks;
    double held = 0;
    BaseResult r;
    r.started_unix = unix_seconds();
    const double t0 = steady_seconds();
    while (held + chunk <= limit) {
      const auto size = static_cast<std::size_t>(chunk);
      void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
      if (p == MAP_FAILED) break;
      std::memset(p, 1, size);  // every page really backed
      chunks.push_back({p, size});
      held += chunk;
    }
    const double seconds = steady_seconds() - t0;
    r.ended_unix = unix_seconds();
    for (auto& [p, size] : chunks) ::munmap(p, size);
    r.correct = held > 0;
    r.check =
        held > 0 ? "every page of " + std::to_string(chunks.size()) + " chunks written" : "no chunk could be held";
    r.implementation = "mmap + touch, chunks of " + std::to_string(ctx.config.get_int("cpu_chunk_mib")) +
                       " MiB up to " + std::to_string(limit / (1 << 30)).substr(0, 6) + " GiB";
    r.figures.push_back({"held", held / (1 << 30), "GiB", "memory_gib"});
    r.figures.push_back({"available at start", available / (1 << 30), "GiB", ""});
    r.figures.push_back({"fill rate", held / seconds / 1e9, "GB/s", ""});
    r.details = {{"limit_bytes", limit}, {"stopped_by", held + chunk > limit ? "limit" : "allocation failure"}};
    return r;
  }
};

XPUPERF_REGISTER_BASE("main_memory-bandwidth", "cpu", CpuBandwidth);
XPUPERF_REGISTER_BASE("main_memory-capacity", "cpu", CpuCapacity);

}  // namespace

}  // namespace xpuperf::base
