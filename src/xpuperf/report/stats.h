#pragma once
// Statistics over the rounds of a case, as benchmark tools report them: mean, sample standard
// deviation, median, min, max, coefficient of variation, a 95 % confidence interval of the mean
// (Student's t), and MLPerf's olympic mean (drop the fastest and the slowest) from 5 rounds on.

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace xpuperf::report {

struct Aggregate {
  std::size_t n = 0;
  double mean = 0, std = 0, median = 0, min = 0, max = 0;
  double cv = 0;                       // std / mean (0 when the mean is 0)
  double ci95_low = 0, ci95_high = 0;  // mean ± t(0.975, n-1) · std / √n; the mean itself when n = 1
  std::optional<double> olympic_mean;  // n ≥ 5

  nlohmann::json to_json() const;
};

Aggregate aggregate(std::vector<double> values);

// Student's t quantile for a two-sided 95 % interval with `df` degrees of freedom.
double t_975(std::size_t df);

}  // namespace xpuperf::report
