#pragma once
// What the GEMM cases multiply and how their results are checked, shared by the CPU and CUDA
// paths. Every input element is k/8 for an integer k in [-8, 8] (integers in [-8, 8] for INT8):
// exact in every precision down to FP8 E4M3, so each product is exact and, with FP32
// accumulation, so is every partial sum (multiples of 1/64 below 2^13). The only error left is
// the output's rounding, which makes the check tight for every precision.
// Layout (BLAS column-major, "TN"): A is k x m (row i of op(A) = A^T is A's column i, contiguous),
// B is k x n, C = A^T B is m x n: C[i + j*m] = sum_l A[l + i*k] * B[l + j*k].

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "xpuperf/base/base_benchmark.h"

#ifdef __CUDACC__
#define XPUPERF_HD __host__ __device__
#else
#define XPUPERF_HD
#endif

namespace xpuperf::base {

// The integer k in [-8, 8] of element `index` of the matrix with this seed.
XPUPERF_HD inline int gemm_level(std::uint64_t index, std::uint32_t seed) {
  std::uint64_t z = index + (static_cast<std::uint64_t>(seed) << 40) + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<int>(z % 17) - 8;
}

struct GemmPrecision {
  std::string name;       // FP64, FP32, TF32, FP16, BF16, FP8, INT8
  bool integer = false;   // INT8: levels as integers, exact int32 results
  double output_rel = 0;  // the output type's relative rounding (0: exact)
  std::string datasheet;  // specs.yaml path of the peak
  std::string unit;       // TFLOP/s or TOP/s
};

// The precision of a metric ("computation-BF16" → BF16); nullptr for an unknown name.
const GemmPrecision* gemm_precision(const std::string& metric);

// Checks sampled elements: `a_rows[s]` is row i_s of A^T (k values), `b_cols[s]` column j_s of B,
// `c[s]` the computed C[i_s, j_s]. Inputs are given as levels (gemm_level); values are level/8
// (level for integer precisions). Returns the number of wrong elements and writes the worst
// error seen, relative to sum |a||b|.
int check_gemm_samples(const GemmPrecision& p, const std::vector<std::vector<int>>& a_rows,
                       const std::vector<std::vector<int>>& b_cols, const std::vector<double>& c, double& worst);

// The (i, j) positions to check: corners, and pseudo-random ones.
std::vector<std::pair<std::int64_t, std::int64_t>> gemm_sample_positions(std::int64_t m, std::int64_t n, int count);

// Checks `samples` elements (gemm_sample_positions) of a size^3 result read with element(i, j)
// against exact sums: sets r.correct and r.check.
void check_gemm_result(const GemmPrecision& p, std::int64_t size, int samples,
                       const std::function<double(std::int64_t, std::int64_t)>& element, BaseResult& r);
// The median and best of the timed windows' rates, the figures of every GEMM case.
void add_gemm_figures(const GemmPrecision& p, const std::vector<double>& rates, BaseResult& r);

// A host-timed GEMM case (CPU paths): `warmup` calls, then `repeats` windows of `seconds`, rates
// in the precision's unit; then the check of sampled outputs, read with `element(i, j)`.
BaseResult time_and_check_host_gemm(const GemmPrecision& p, const Config& config, std::int64_t size,
                                    const std::function<void()>& gemm,
                                    const std::function<double(std::int64_t, std::int64_t)>& element);

}  // namespace xpuperf::base
