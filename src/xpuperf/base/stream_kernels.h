#pragma once
// BabelStream's four kernels as every main_memory-bandwidth implementation times them (read = a
// sum of a, write c = s, copy c = a, triad a = b + s*c, in that order each round, from a = 1, b = 2,
// c = 0), the values they must leave, and the figures they give. Header-only: vendors' plug-ins
// use it without linking xpuperf.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "xpuperf/base/base_benchmark.h"

namespace xpuperf::base {

inline constexpr double kStreamScalar = 0.4;

struct StreamKernel {
  std::string name;
  double bytes;  // read plus written by one call
  std::vector<double> rates;
};

// The four kernels over arrays of `array_bytes` each.
inline std::vector<StreamKernel> stream_kernels(double array_bytes) {
  return {{"read", array_bytes, {}},
          {"write", array_bytes, {}},
          {"copy", 2 * array_bytes, {}},
          {"triad", 3 * array_bytes, {}}};
}

// What every element of a and c holds after `repeats` rounds (the same recurrence on scalars; to
// rounding, since triad may use an FMA), and the sum over the rounds of a's value when read ran.
struct StreamExpected {
  double a = 1.0, c = 0.0, read_sum_per_element = 0.0;
};
inline StreamExpected stream_expected(std::int64_t repeats) {
  StreamExpected e;
  for (std::int64_t rep = 0; rep < repeats; ++rep) {
    e.read_sum_per_element += e.a;
    e.c = e.a;  // write's c = s is overwritten by copy
    e.a = 2.0 + kStreamScalar * e.c;
  }
  return e;
}

// Each kernel's best ("read") and then each one's median ("read median"), the best of those named in
// `against_sheet` beside memory_bandwidth_gbps; every rate in the details.
inline void add_stream_figures(const std::vector<StreamKernel>& kernels, const std::vector<std::string>& against_sheet,
                               BaseResult& r) {
  for (const auto& k : kernels) {
    const bool sheet = std::find(against_sheet.begin(), against_sheet.end(), k.name) != against_sheet.end();
    r.figures.push_back({k.name, best_of(k.rates), "GB/s", sheet ? "memory_bandwidth_gbps" : ""});
  }
  for (const auto& k : kernels) r.figures.push_back({k.name + " median", median_of(k.rates), "GB/s", ""});
  for (const auto& k : kernels) r.details[k.name] = k.rates;
}

}  // namespace xpuperf::base
