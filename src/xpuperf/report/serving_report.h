#pragma once
// The llm case's serving sweep (infer/serving_sweep.h) in the report: its points over a case's ok
// rounds (one per input/output pair and concurrency), report.html's frontier (output tokens/s per
// GPU against tokens/s per user, each point labelled by its concurrency), serving_sweep.csv, and
// `xpuperf compare`'s rows for two runs' frontiers.

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "xpuperf/report/compare.h"
#include "xpuperf/report/summary_model.h"

namespace xpuperf::report {

struct SweepPoint {
  std::string key;      // "1024/256 at concurrency 64"
  std::string lengths;  // "1024/256", or "trace lengths.csv"
  std::int64_t input = 0, output = 0, concurrency = 0;
  std::vector<double> output_tokens_per_second, tokens_per_second_per_user, tpot_p50_ms, ttft_p50_ms;  // a round each
};

// The ok points of every ok round of a case, in the first round's order.
std::vector<SweepPoint> sweep_points(const CaseResult& c);

// The frontier as an HTML figure, and the first ok round's table; "" for a case without a sweep.
std::string sweep_section_html(const CaseResult& c);

// serving_sweep.csv: a row per point of every round, failed points with their error.
std::string serving_sweep_csv(const Summary& summary);
bool has_serving_sweep(const Summary& summary);

// Each ok point's energy where the monitor saw the device's power over the point's window: its mean
// power, joules per output token and output tokens/s per megawatt (InferenceMAX's), written into
// the generation record's points.
void put_sweep_energy(nlohmann::json& generation, const std::vector<std::string>& monitor_files,
                      const std::set<std::string>& accelerators);

// Each point both runs have: output tokens/s per GPU (higher is better) and TPOT p50 (lower is).
void compare_sweep_points(const CaseResult& a, const CaseResult& b, std::vector<FigureComparison>& out);

}  // namespace xpuperf::report
