#include "xpuperf/base/gemm_check.h"

#include <cmath>

namespace xpuperf::base {

const GemmPrecision* gemm_precision(const std::string& metric) {
  static const std::vector<GemmPrecision> all = {
      {"FP64", false, 1.2e-16, "peak_tflops.fp64", "TFLOP/s"}, {"FP32", false, 6.0e-8, "peak_tflops.fp32", "TFLOP/s"},
      {"TF32", false, 6.0e-8, "peak_tflops.tf32", "TFLOP/s"},  // exact inputs, FP32 output
      {"FP16", false, 4.9e-4, "peak_tflops.fp16", "TFLOP/s"},  {"BF16", false, 3.9e-3, "peak_tflops.bf16", "TFLOP/s"},
      {"FP8", false, 3.9e-3, "peak_tflops.fp8", "TFLOP/s"},  // E4M3 inputs, BF16 output
      {"INT8", true, 0.0, "peak_tflops.int8", "TOP/s"}};
  const std::string prefix = "computation-";
  if (metric.rfind(prefix, 0) != 0) return nullptr;
  for (const auto& p : all)
    if (p.name == metric.substr(prefix.size())) return &p;
  return nullptr;
}

int check_gemm_samples(const GemmPrecision& p, const std::vector<std::vector<int>>& a_rows,
                       const std::vector<std::vector<int>>& b_cols, const std::vector<double>& c, double& worst) {
  int wrong = 0;
  worst = 0;
  const double scale = p.integer ? 1.0 : 1.0 / 64.0;
  for (std::size_t s = 0; s < c.size(); ++s) {
    long long exact = 0, magnitude = 0;
    for (std::size_t l = 0; l < a_rows[s].size(); ++l) {
      exact += static_cast<long long>(a_rows[s][l]) * b_cols[s][l];
      magnitude += std::llabs(static_cast<long long>(a_rows[s][l]) * b_cols[s][l]);
    }
    const double reference = static_cast<double>(exact) * scale;
    const double error = std::abs(c[s] - reference) / std::max(1.0, static_cast<double>(magnitude) * scale);
    worst = std::max(worst, error);
    // The output rounding of |C| <= sum |a||b|, with room for one extra rounding.
    if (error > 2.0 * p.output_rel + 1e-12) ++wrong;
  }
  return wrong;
}

std::vector<std::pair<std::int64_t, std::int64_t>> gemm_sample_positions(std::int64_t m, std::int64_t n, int count) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out = {{0, 0}, {m - 1, n - 1}, {0, n - 1}, {m - 1, 0}};
  for (int s = 0; static_cast<int>(out.size()) < count; ++s) {
    const auto i = static_cast<std::int64_t>((static_cast<std::uint64_t>(gemm_level(s, 7) + 8) * 7919u + s * 104729u) %
                                             static_cast<std::uint64_t>(m));
    const auto j =
        static_cast<std::int64_t>((static_cast<std::uint64_t>(s) * 2654435761u) % static_cast<std::uint64_t>(n));
    out.push_back({i, j});
  }
  out.resize(static_cast<std::size_t>(std::min<std::int64_t>(count, static_cast<std::int64_t>(out.size()))));
  return out;
}

void check_gemm_result(const GemmPrecision& p, std::int64_t size, int samples,
                       const std::function<double(std::int64_t, std::int64_t)>& element, BaseResult& r) {
  std::vector<std::vector<int>> a_rows, b_cols;
  std::vector<double> c;
  for (const auto& [i, j] : gemm_sample_positions(size, size, samples)) {
    std::vector<int> a(static_cast<std::size_t>(size)), b(static_cast<std::size_t>(size));
    for (std::int64_t l = 0; l < size; ++l) {
      a[static_cast<std::size_t>(l)] = gemm_level(static_cast<std::uint64_t>(l + i * size), 1);
      b[static_cast<std::size_t>(l)] = gemm_level(static_cast<std::uint64_t>(l + j * size), 2);
    }
    a_rows.push_back(std::move(a));
    b_cols.push_back(std::move(b));
    c.push_back(element(i, j));
  }
  double worst = 0;
  const int wrong = check_gemm_samples(p, a_rows, b_cols, c, worst);
  r.correct = wrong == 0;
  r.check = std::to_string(wrong) + " wrong of " + std::to_string(c.size()) +
            " sampled elements against exact sums (worst relative error " + std::to_string(worst) + ")";
}

void add_gemm_figures(const GemmPrecision& p, const std::vector<double>& rates, BaseResult& r) {
  r.figures.push_back({"median", median_of(rates), p.unit, p.datasheet});
  r.figures.push_back({"best", best_of(rates), p.unit, p.datasheet});
}

BaseResult time_and_check_host_gemm(const GemmPrecision& p, const Config& config, std::int64_t size,
                                    const std::function<void()>& gemm,
                                    const std::function<double(std::int64_t, std::int64_t)>& element) {
  BaseResult r;
  for (int i = 0; i < config.get_int("warmup"); ++i) gemm();
  const double flops = 2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size);
  std::vector<double> rates;
  r.started_unix = unix_seconds();
  for (int rep = 0; rep < config.get_int("repeats"); ++rep) {
    const double t0 = steady_seconds();
    int calls = 0;
    do {
      gemm();
      ++calls;
    } while (steady_seconds() - t0 < config.get_number("seconds"));
    rates.push_back(flops * calls / (steady_seconds() - t0) / 1e12);
  }
  r.ended_unix = unix_seconds();

  check_gemm_result(p, size, static_cast<int>(config.get_int("check_samples")), element, r);
  add_gemm_figures(p, rates, r);
  r.details = {{"m", size}, {"n", size}, {"k", size}, {"rates", rates}};
  return r;
}

}  // namespace xpuperf::base
