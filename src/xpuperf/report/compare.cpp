#include "xpuperf/report/compare.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "xpuperf/report/operator_rows.h"
#include "xpuperf/report/serving_report.h"

namespace xpuperf::report {

namespace {

double beta_continued_fraction(double a, double b, double x) {
  const int kMaxIterations = 300;
  const double kEps = 3e-14, kTiny = 1e-300;
  double qab = a + b, qap = a + 1, qam = a - 1, c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= kMaxIterations; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < kEps) break;
  }
  return h;
}

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double variance_of(const std::vector<double>& v, double mean) {
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return ss / static_cast<double>(v.size() - 1);
}

}  // namespace

namespace {

// Each operator row both runs have: its time of one call, lower is better.
void compare_operator_rows(const CaseResult& a, const CaseResult& b, std::vector<FigureComparison>& out) {
  const auto rows_b = operator_rows(b, Roof{});
  for (const auto& ra : operator_rows(a, Roof{})) {
    const auto rb = std::find_if(rows_b.begin(), rows_b.end(), [&ra](const auto& r) { return r.key == ra.key; });
    if (rb == rows_b.end()) continue;
    FigureComparison c;
    c.case_key = a.identity();
    c.figure = ra.key + " ms";
    c.higher_is_better = false;
    c.mean_a = mean_of(ra.median_ms);
    c.mean_b = mean_of(rb->median_ms);
    c.ratio = c.mean_a != 0 ? c.mean_b / c.mean_a : 0;
    c.test = welch_t_test(ra.median_ms, rb->median_ms);
    c.significant = c.test && c.test->p < 0.05;
    out.push_back(c);
  }
}

}  // namespace

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log(1 - x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

std::optional<WelchResult> welch_t_test(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2 || b.size() < 2) return std::nullopt;
  const double ma = mean_of(a), mb = mean_of(b);
  const double va = variance_of(a, ma) / static_cast<double>(a.size());
  const double vb = variance_of(b, mb) / static_cast<double>(b.size());
  WelchResult r;
  if (va + vb == 0) {
    r.p = ma == mb ? 1.0 : 0.0;  // no spread at all: any difference is certain
    r.t = ma == mb ? 0 : INFINITY;
    return r;
  }
  r.t = (mb - ma) / std::sqrt(va + vb);
  r.df = (va + vb) * (va + vb) /
         (va * va / static_cast<double>(a.size() - 1) + vb * vb / static_cast<double>(b.size() - 1));
  r.p = incomplete_beta(r.df / 2, 0.5, r.df / (r.df + r.t * r.t));
  return r;
}

bool FigureComparison::regression(double percent) const {
  if (!significant) return false;
  const double worse = higher_is_better ? 1 - ratio : ratio - 1;
  return worse * 100 > percent;
}

std::string verdict(const FigureComparison& r, double fail_percent) {
  std::string text;
  if (!r.test) {
    text = "too few rounds to test (2 a side)";
  } else if (!r.significant) {
    text = "no significant change";
  } else {
    const bool better = r.higher_is_better ? r.ratio > 1 : r.ratio < 1;
    text = better ? "better (significant)" : "worse (significant)";
  }
  if (fail_percent >= 0 && r.regression(fail_percent)) text += ", REGRESSION";
  return text;
}

std::vector<FigureComparison> compare_summaries(const Summary& a, const Summary& b) {
  const std::vector<std::pair<std::string, bool>> figures = {{"training_samples_per_second", true},
                                                             {"e2e_time", false},
                                                             {"time_to_target", false},
                                                             {"final_metric", true},
                                                             {"energy_per_sample_j", false}};
  // The ok rounds' values of a figure.
  auto values = [](const CaseResult& c, const std::string& figure) {
    std::vector<double> out;
    for (const auto& r : c.rounds)
      if (const double* v = r.ok() ? r.find(figure) : nullptr) out.push_back(*v);
    return out;
  };
  std::vector<FigureComparison> out;
  for (const auto& ca : a.cases) {
    for (const auto& cb : b.cases) {
      if (ca.identity() != cb.identity()) continue;  // a case is the same whatever its repeat count
      for (const auto& [figure, higher] : figures) {
        const std::vector<double> va = values(ca, figure), vb = values(cb, figure);
        if (va.empty() || vb.empty()) continue;
        FigureComparison c;
        c.case_key = ca.identity();
        c.figure = figure;
        c.higher_is_better = higher;
        c.mean_a = mean_of(va);
        c.mean_b = mean_of(vb);
        c.ratio = c.mean_a != 0 ? c.mean_b / c.mean_a : 0;
        c.test = welch_t_test(va, vb);
        c.significant = c.test && c.test->p < 0.05;
        out.push_back(c);
      }
      if (ca.is(CaseFamilyKind::Operation)) compare_operator_rows(ca, cb, out);
      compare_sweep_points(ca, cb, out);
    }
  }
  return out;
}

}  // namespace xpuperf::report
