#include "xpuperf/report/measured_roof.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace xpuperf::report {
namespace {

constexpr const char* kComputation = "computation-";
constexpr const char* kAllReduce = "interconnect-allreduce";

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (const double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

// The fastest of the medians of the kernels that read (a write alone is not what an operator does).
double bandwidth_of(const Round& r) {
  double best = 0;
  const nlohmann::json* figures = r.record("figures");
  if (!figures || !figures->is_array()) return 0;
  for (const auto& f : *figures) {
    const std::string name = f.value("name", "");
    if ((name == "read median" || name == "copy median" || name == "triad median") && f.contains("value") &&
        f["value"].is_number())
      best = std::max(best, f["value"].get<double>());
  }
  return best;
}

}  // namespace

Roof measured_roof(const Summary& summary, const std::string& hardware) {
  Roof roof;
  std::vector<std::string> cases;
  std::vector<double> bandwidths;
  for (const auto& c : summary.cases) {
    if (!c.is(CaseFamilyKind::Base) || (!hardware.empty() && c.hardware != hardware)) continue;
    const bool computation = c.model.rfind(kComputation, 0) == 0;
    const bool all_reduce = c.model == kAllReduce;
    if (!computation && !all_reduce && c.model != "main_memory-bandwidth") continue;
    std::vector<double> values;
    for (const auto& r : c.rounds) {
      if (!r.ok() || !r.correct.value_or(true)) continue;
      // A computation case's figure is its TFLOP/s; all-reduce's, its bus bandwidth at the largest size.
      const double v = computation || all_reduce ? (r.find("value") ? *r.find("value") : 0) : bandwidth_of(r);
      if (v > 0) values.push_back(v);
    }
    if (values.empty()) continue;
    cases.push_back(c.model);
    if (computation) {
      std::string dtype = c.model.substr(std::string(kComputation).size());
      std::transform(dtype.begin(), dtype.end(), dtype.begin(), [](unsigned char ch) { return std::tolower(ch); });
      roof.peak_tflops[dtype] = mean(values);
    } else if (all_reduce) {
      roof.interconnect_gbps = mean(values);
    } else {
      roof.bandwidth_gbps = mean(values);
    }
  }
  if (!roof.empty()) {
    std::string names;
    for (const auto& n : cases) names += (names.empty() ? "" : ", ") + n;
    roof.source = "measured: " + names + " of run " + summary.run;
  }
  return roof;
}

}  // namespace xpuperf::report
