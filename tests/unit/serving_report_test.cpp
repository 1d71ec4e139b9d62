// The serving sweep in the report (report/serving_report.h): a point's energy from the monitor
// over its window, its figures over the rounds, and two runs' points compared.

#include "xpuperf/report/serving_report.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "xpuperf/monitor/analysis.h"

namespace xpuperf::report {
namespace {

using nlohmann::json;

json point(double tokens_per_second, double tpot, double t0, double t1) {
  return {{"input_tokens", 1024},
          {"output_tokens", 100},
          {"concurrency", 4},
          {"queries", 2},
          {"ok", true},
          {"output_tokens_per_second_per_gpu", tokens_per_second},
          {"tokens_per_second_per_user", 1000 / tpot},
          {"tpot_ms", {{"p50", tpot}, {"p90", tpot}, {"p99", tpot}}},
          {"ttft_ms", {{"p50", 10}, {"p90", 10}, {"p99", 10}}},
          {"started_unix", t0},
          {"ended_unix", t1}};
}

CaseResult llm_case(const std::vector<json>& points_a_round) {
  CaseResult c;
  c.key = "llm:libtorch:H200:" + std::to_string(points_a_round.size());
  c.family = CaseFamilyKind::Inference;
  c.model = "llm";
  int n = 0;
  for (const auto& p : points_a_round) {
    Round r;
    r.number = ++n;
    r.status = "ok";
    r.records["generation"] = {{"sweep",
                                {{"points", json::array({p,
                                                         {{"input_tokens", 1024},
                                                          {"output_tokens", 100},
                                                          {"concurrency", 8},
                                                          {"ok", false},
                                                          {"error", "out of memory"}}})}}}};
    c.rounds.push_back(r);
  }
  return c;
}

TEST(ServingReport, APointsEnergyIsTheMonitorsPowerOverItsWindow) {
  test::TempDir dir;
  std::string csv = "time,node,device,metric,value\n";
  for (int t = 0; t <= 20; ++t)
    csv += std::to_string(1000 + t) + ",n0,gpu0,power_w," + std::to_string(t >= 5 && t <= 10 ? 600 : 100) + "\n";
  const std::string path = dir.write("monitor.csv", csv);
  json g = {{"sweep", {{"points", json::array({point(40, 20, 1005, 1010)})}}}};
  put_sweep_energy(g, {path}, monitor::accelerators_of_round(1));
  const json& p = g["sweep"]["points"][0];
  EXPECT_DOUBLE_EQ(p["mean_power_w"].get<double>(), 600);
  EXPECT_DOUBLE_EQ(p["joules_per_output_token"].get<double>(), 600.0 * 5 / 200) << "2 queries of 100 tokens";
  EXPECT_DOUBLE_EQ(p["output_tokens_per_second_per_megawatt"].get<double>(), 40 / 600e-6);
  json none = {{"sweep", {{"points", json::array({point(40, 20, 1005, 1010)})}}}};
  put_sweep_energy(none, {}, {});
  EXPECT_FALSE(none["sweep"]["points"][0].contains("joules_per_output_token")) << "no monitor, no figure";
}

TEST(ServingReport, TwoRunsPointsAreComparedOverTheirRounds) {
  const CaseResult a = llm_case({point(1000, 10, 1, 2), point(1010, 10.2, 1, 2), point(990, 9.8, 1, 2)});
  const CaseResult b = llm_case({point(1500, 7, 1, 2), point(1490, 7.1, 1, 2), point(1510, 6.9, 1, 2)});
  const auto points = sweep_points(a);
  ASSERT_EQ(points.size(), 1u) << "the failed point is left out";
  EXPECT_EQ(points[0].key, "1024/100 at concurrency 4");
  EXPECT_EQ(points[0].output_tokens_per_second.size(), 3u);
  std::vector<FigureComparison> rows;
  compare_sweep_points(a, b, rows);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].figure, "sweep 1024/100 at concurrency 4 output tokens/s per GPU");
  EXPECT_TRUE(rows[0].higher_is_better);
  EXPECT_NEAR(rows[0].ratio, 1.5, 1e-12);
  EXPECT_TRUE(rows[0].significant);
  EXPECT_EQ(rows[1].figure, "sweep 1024/100 at concurrency 4 TPOT p50 ms");
  EXPECT_FALSE(rows[1].higher_is_better);
  EXPECT_EQ(verdict(rows[1]), "better (significant)");
  EXPECT_NE(sweep_section_html(a).find("failed: out of memory"), std::string::npos);
}

}  // namespace
}  // namespace xpuperf::report
