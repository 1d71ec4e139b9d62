#include "xpuperf/report/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace xpuperf::report {

double t_975(std::size_t df) {
  static const double table[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201, 2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080,
                                 2.074, 2.069,  2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df == 0) return 0;
  if (df <= 30) return table[df];
  if (df <= 60) return 2.000 + (60.0 - static_cast<double>(df)) / 30.0 * 0.042;  // 2.042 at 30 to 2.000 at 60
  if (df <= 120) return 1.980 + (120.0 - static_cast<double>(df)) / 60.0 * 0.020;
  return 1.960;
}

Aggregate aggregate(std::vector<double> values) {
  Aggregate a;
  a.n = values.size();
  if (values.empty()) return a;
  std::sort(values.begin(), values.end());
  const double n = static_cast<double>(a.n);
  a.mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
  a.min = values.front();
  a.max = values.back();
  a.median = a.n % 2 ? values[a.n / 2] : (values[a.n / 2 - 1] + values[a.n / 2]) / 2.0;
  if (a.n > 1) {
    double ss = 0;
    for (double v : values) ss += (v - a.mean) * (v - a.mean);
    a.std = std::sqrt(ss / (n - 1));
  }
  a.cv = a.mean != 0 ? a.std / std::fabs(a.mean) : 0;
  const double half = a.n > 1 ? t_975(a.n - 1) * a.std / std::sqrt(n) : 0;
  a.ci95_low = a.mean - half;
  a.ci95_high = a.mean + half;
  if (a.n >= 5) a.olympic_mean = std::accumulate(values.begin() + 1, values.end() - 1, 0.0) / (n - 2);
  return a;
}

nlohmann::json Aggregate::to_json() const {
  nlohmann::json out = {{"n", n},     {"mean", mean}, {"std", std}, {"median", median},
                        {"min", min}, {"max", max},   {"cv", cv},   {"ci95", {ci95_low, ci95_high}}};
  out["olympic_mean"] = olympic_mean ? nlohmann::json(*olympic_mean) : nlohmann::json(nullptr);
  return out;
}

}  // namespace xpuperf::report
