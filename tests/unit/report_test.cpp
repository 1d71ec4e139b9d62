#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "test_util.h"
#include "xpuperf/report/stats.h"
#include "xpuperf/report/summary.h"

namespace xpuperf::report {
namespace {

TEST(Stats, KnownValues) {
  const Aggregate a = aggregate({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_EQ(a.n, 8u);
  EXPECT_DOUBLE_EQ(a.mean, 5.0);
  EXPECT_NEAR(a.std, 2.138089935, 1e-9);  // sample standard deviation (n - 1)
  EXPECT_DOUBLE_EQ(a.median, 4.5);
  EXPECT_DOUBLE_EQ(a.min, 2.0);
  EXPECT_DOUBLE_EQ(a.max, 9.0);
  EXPECT_NEAR(a.cv, 2.138089935 / 5.0, 1e-9);
  EXPECT_NEAR(a.ci95_low, 5.0 - 2.365 * 2.138089935 / std::sqrt(8.0), 1e-9);
  EXPECT_NEAR(a.ci95_high, 5.0 + 2.365 * 2.138089935 / std::sqrt(8.0), 1e-9);
  ASSERT_TRUE(a.olympic_mean);
  EXPECT_DOUBLE_EQ(*a.olympic_mean, (4 + 4 + 4 + 5 + 5 + 7) / 6.0);  // without 2 and 9
}

TEST(Stats, SmallSamples) {
  const Aggregate one = aggregate({3.5});
  EXPECT_DOUBLE_EQ(one.std, 0.0);
  EXPECT_DOUBLE_EQ(one.ci95_low, 3.5);
  EXPECT_FALSE(one.olympic_mean);
  EXPECT_FALSE(aggregate({1, 2, 3, 4}).olympic_mean);
  EXPECT_TRUE(aggregate({1, 2, 3, 4, 5}).olympic_mean);
  EXPECT_EQ(aggregate({}).n, 0u);
  EXPECT_DOUBLE_EQ(t_975(1), 12.706);
  EXPECT_DOUBLE_EQ(t_975(1000), 1.960);
}

TEST(Summary, RebuiltFromAResultTreeIsGolden) {
  const std::string run = test::test_path("fixtures/run_tree/run20260101000000");
  const auto summary = build_summary(run);
  EXPECT_EQ(summary["schema"], "xpuperf.summary/1");
  EXPECT_EQ(test::compare_golden("summary.json", summary.dump(2) + "\n"), "");
  EXPECT_EQ(test::compare_golden("summary.md", summary_markdown(summary)), "");
  // The round without round_status.json counts, from its PerfLog alone; the failed one does not.
  const auto& first = summary["cases"][0]["aggregate"];
  EXPECT_EQ(first["rounds_used"], 5);
  EXPECT_EQ(first["training_samples_per_second"]["n"], 5);
  const auto& second = summary["cases"][1];
  EXPECT_EQ(second["aggregate"]["rounds_used"], 1);
  EXPECT_EQ(second["failed_rounds"][0]["reason"], "rank 1 killed by signal 9 (Killed)");
}

TEST(Summary, ANonRunFolderIsAClearError) {
  test::TempDir dir;
  try {
    build_summary(dir.path());
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a run folder (no plan.yaml, and no FlagPerf"), std::string::npos);
  }
}

}  // namespace
}  // namespace xpuperf::report

#include "xpuperf/report/html.h"

namespace xpuperf::report {
namespace {

TEST(Html, LineChartsDrawEverySeries) {
  const std::string svg =
      svg_line_chart("power <W>", {{"gpu0", {{0, 100}, {1, 200}, {2, 150}}}, {"gpu1", {{0, 90}}}}, "W");
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n'), 0);
  EXPECT_NE(svg.find("<title>power &lt;W&gt;</title>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("<W>"), std::string::npos);  // escaped
  std::size_t lines = 0;
  for (std::size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++lines;
  EXPECT_EQ(lines, 2u);
  EXPECT_NE(svg_line_chart("empty", {}, "W").find("no samples"), std::string::npos);
}

TEST(Html, TheReportOfAResultTreeHasTheTableTheChartsAndTheFailures) {
  const std::string run = test::test_path("fixtures/run_tree/run20260101000000");
  const std::string html = report_html(build_summary(run), run);
  for (const char* part : {"<!DOCTYPE html>", "<table>", "lenet5:libtorch:CPU:1:1:5", "Throughput per round",
                           "<polyline", "power_w", "mem_used_bytes", "rank 1 killed by signal 9 (Killed)"})
    EXPECT_NE(html.find(part), std::string::npos) << part;
  // Nothing is fetched from a network: the only addresses are SVG's namespace.
  auto count = [&html](const std::string& what) {
    std::size_t n = 0;
    for (auto at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("http"), count("http://www.w3.org/2000/svg"));
}

}  // namespace
}  // namespace xpuperf::report

#include "xpuperf/report/compare.h"

namespace xpuperf::report {
namespace {

TEST(Compare, IncompleteBetaAndWelchAgainstKnownValues) {
  EXPECT_NEAR(incomplete_beta(2, 3, 0.5), 0.6875, 1e-12);  // sum of binomial terms
  EXPECT_NEAR(incomplete_beta(1, 1, 0.3), 0.3, 1e-12);     // the uniform distribution
  const auto w = welch_t_test({1, 2, 3, 4, 5}, {2, 4, 6, 8, 10});
  ASSERT_TRUE(w);
  EXPECT_NEAR(w->t, 3.0 / std::sqrt(2.5), 1e-12);
  EXPECT_NEAR(w->df, 6.25 / (0.0625 + 1.0), 1e-12);
  EXPECT_NEAR(w->p, 0.1072, 0.002);  // scipy.stats.ttest_ind(equal_var=False): 0.10724
  EXPECT_FALSE(welch_t_test({1}, {2, 3}));
  EXPECT_DOUBLE_EQ(welch_t_test({5, 5}, {5, 5})->p, 1.0);
}

nlohmann::json summary_with(const std::string& key, const std::vector<double>& rates) {
  nlohmann::json rounds = nlohmann::json::array();
  for (double r : rates) rounds.push_back({{"status", "ok"}, {"training_samples_per_second", r}});
  rounds.push_back({{"status", "failed"}, {"training_samples_per_second", 1.0}});  // never counted
  return {{"cases", {{{"case", key}, {"rounds", rounds}}}}};
}

TEST(Compare, VerdictsOnConstructedRuns) {
  const auto a = summary_with("m:f:H:1:1:5", {100, 101, 99, 100, 100});
  // 10 % slower, clearly: a regression beyond 5 % but not beyond 20 %.
  auto rows = compare_summaries(a, summary_with("m:f:H:1:1:3", {90, 91, 89}));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].case_key, "m:f:H:1:1");
  EXPECT_NEAR(rows[0].ratio, 0.9, 1e-12);
  EXPECT_TRUE(rows[0].significant);
  EXPECT_TRUE(rows[0].regression(5));
  EXPECT_FALSE(rows[0].regression(20));
  // Noise: no significant change, whatever the threshold.
  rows = compare_summaries(a, summary_with("m:f:H:1:1:5", {99, 102, 100, 98, 101}));
  EXPECT_FALSE(rows[0].significant);
  EXPECT_FALSE(rows[0].regression(0));
  // Different cases are not compared.
  EXPECT_TRUE(compare_summaries(a, summary_with("m:f:H:1:8:5", {100, 100})).empty());
}

}  // namespace
}  // namespace xpuperf::report

#include "xpuperf/report/history.h"

namespace xpuperf::report {
namespace {

TEST(History, RecordsRunsOnceAndListsThem) {
  test::TempDir dir;
  const std::string db = dir.path() + "/sub/history.db";
  const std::string run = test::test_path("fixtures/run_tree/run20260101000000");
  const auto summary = build_summary(run);
  record_run(db, summary, run);
  record_run(db, summary, run);  // the same run folder again: replaced, not doubled
  const auto rows = list_history(db);
  ASSERT_EQ(rows.size(), 2u);  // two cases of one run
  EXPECT_EQ(rows[0].case_key, "lenet5:libtorch:CPU:1:1:5");
  EXPECT_EQ(rows[0].rounds, 5);
  EXPECT_EQ(rows[0].rounds_ok, 5);
  EXPECT_EQ(rows[0].rounds_converged, 5);
  EXPECT_DOUBLE_EQ(rows[0].mean_samples_per_second, 13000.0);
  EXPECT_EQ(rows[1].rounds, 2);
  EXPECT_EQ(rows[1].rounds_ok, 1);
  EXPECT_EQ(list_history(db, "lenet5:libtorch:CPU:1:2").size(), 1u);
  EXPECT_TRUE(list_history(dir.path() + "/absent.db").empty());
}

}  // namespace
}  // namespace xpuperf::report

namespace xpuperf::report {
namespace {

TEST(Summary, AFlagPerfResultTreeIsReadToo) {
  const auto summary = build_summary(test::test_path("fixtures/flagperf_tree/run20221121191924"));
  EXPECT_EQ(summary["source"], "flagperf");
  EXPECT_EQ(test::compare_golden("summary_flagperf.json", summary.dump(2) + "\n"), "");
  EXPECT_EQ(test::compare_golden("summary_flagperf.md", summary_markdown(summary)), "");
  ASSERT_EQ(summary["cases"].size(), 2u);
  const auto& glm = summary["cases"][1];
  EXPECT_EQ(glm["case"], "GLM_TORCH_DEMO_A100_1X8");
  EXPECT_EQ(glm["aggregate"]["rounds_used"], 3);
  EXPECT_EQ(glm["aggregate"]["final_metric_name"], "mlm_accuracy");
  const auto& cpm = summary["cases"][0];
  EXPECT_EQ(cpm["failed_rounds"][0]["round"], 2);
}

}  // namespace
}  // namespace xpuperf::report

namespace xpuperf::report {
namespace {

TEST(Summary, MfuFromTheModelFlopsAndTheChipsPeak) {
  test::TempDir dir;
  dir.write("run1/plan.yaml", "vendor: nvidia\ncases:\n  \"m:libtorch:H100:1:2:2\": /d\n");
  auto finished = [](const char* precision) {
    return std::string(
               "[PerfLog] {\"event\":\"FINISHED\",\"value\":{\"training_samples_per_second\":1000000,"
               "\"train_flops_per_sample\":2500000,\"world_size\":2,\"mixed_precision\":\"") +
           precision + "\"}}\n";
  };
  const std::string status = "{\"status\":\"ok\",\"monitor\":{\"fp32_peak_tflops\":67,\"fp16_peak_tflops\":989.4}}";
  dir.write("run1/m_libtorch_H100_1_2_2/round1/localhost_noderank0/rank0.out.log", finished("off"));
  dir.write("run1/m_libtorch_H100_1_2_2/round1/round_status.json", status);
  dir.write("run1/m_libtorch_H100_1_2_2/round2/localhost_noderank0/rank0.out.log", finished("bf16"));
  dir.write("run1/m_libtorch_H100_1_2_2/round2/round_status.json", status);
  const auto s = build_summary(dir.path() + "/run1");
  const auto& rounds = s["cases"][0]["rounds"];
  EXPECT_NEAR(rounds[0]["mfu"].get<double>(), 2.5e6 * 1e6 / (67e12 * 2), 1e-12);     // fp32 peak
  EXPECT_NEAR(rounds[1]["mfu"].get<double>(), 2.5e6 * 1e6 / (989.4e12 * 2), 1e-12);  // bf16: the fp16 peak
  EXPECT_EQ(s["cases"][0]["aggregate"]["mfu"]["n"], 2);
}

}  // namespace
}  // namespace xpuperf::report
