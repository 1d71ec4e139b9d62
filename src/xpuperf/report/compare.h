#pragma once
// Comparing two runs case by case: the ratio B/A of each figure's mean and Welch's t-test over
// the rounds, so a change is called significant only when the rounds say so.

#include <optional>
#include <string>
#include <vector>

#include "xpuperf/report/summary_model.h"

namespace xpuperf::report {

struct WelchResult {
  double t = 0;
  double df = 0;
  double p = 1;  // two-sided
};

// Welch's unequal-variances t-test; nothing when either side has fewer than 2 values.
std::optional<WelchResult> welch_t_test(const std::vector<double>& a, const std::vector<double>& b);

// The regularized incomplete beta function I_x(a, b) (Numerical Recipes' continued fraction).
double incomplete_beta(double a, double b, double x);

struct FigureComparison {
  std::string case_key, figure;
  double mean_a = 0, mean_b = 0, ratio = 0;  // B / A
  std::optional<WelchResult> test;
  bool significant = false;  // p < 0.05
  bool higher_is_better = true;
  bool regression(double percent) const;  // significant and worse by more than `percent`
};

// What the rounds say about a figure: "better (significant)", "no significant change", ...,
// with ", REGRESSION" when it got worse beyond `fail_percent` (negative: not checked).
std::string verdict(const FigureComparison& row, double fail_percent = -1);

// Per case present in both summaries (model:framework:hardware:nnodes:nproc, whatever the
// repeat count), per figure both have successful rounds of.
std::vector<FigureComparison> compare_summaries(const Summary& a, const Summary& b);

}  // namespace xpuperf::report
