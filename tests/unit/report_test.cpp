#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>

#include "test_util.h"
#include "xpuperf/report/history.h"
#include "xpuperf/report/html.h"
#include "xpuperf/report/stats.h"
#include "xpuperf/report/summary.h"
#include "xpuperf/report/summary_csv.h"

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

// With HOME unset (cron, env -i) the history goes to the account's home, never into the working folder.
TEST(History, WithoutHomeTheStoreIsInTheAccountsHome) {
  const auto keep = [](const char* name) {
    const char* v = std::getenv(name);
    return std::make_pair(std::string(name), v ? std::optional<std::string>(v) : std::nullopt);
  };
  const auto saved = {keep("HOME"), keep("XDG_DATA_HOME"), keep("XPUPERF_HISTORY")};
  for (const auto& [name, value] : saved) ::unsetenv(name.c_str());
  const std::string path = default_history_path();
  for (const auto& [name, value] : saved)
    if (value) ::setenv(name.c_str(), value->c_str(), 1);
  const passwd* account = ::getpwuid(::getuid());
  ASSERT_NE(account, nullptr);
  EXPECT_EQ(path, std::string(account->pw_dir) + "/.local/share/xpuperf/history.db");
}

TEST(Summary, RebuiltFromAResultTreeIsGolden) {
  const std::string run = test::test_path("fixtures/run_tree/run20260101000000");
  const Summary summary = build_summary(run);
  EXPECT_EQ(summary.schema, "xpuperf.summary/1");
  EXPECT_EQ(test::compare_golden("summary.json", summary.to_json().dump(2) + "\n"), "");
  EXPECT_EQ(test::compare_golden("summary.md", summary_markdown(summary)), "");
  EXPECT_EQ(test::compare_golden("summary.csv", summary_csv(summary)), "");
  // The round without round_status.json counts, from its PerfLog alone; the failed one does not.
  const CaseResult& first = summary.cases[0];
  EXPECT_EQ(first.rounds_used, 5);
  ASSERT_NE(first.stat("training_samples_per_second"), nullptr);
  EXPECT_EQ(first.stat("training_samples_per_second")->n, 5u);
  const CaseResult& second = summary.cases[1];
  EXPECT_EQ(second.rounds_used, 1);
  EXPECT_EQ(summary.to_json()["cases"][1]["failed_rounds"][0]["reason"], "rank 1 killed by signal 9 (Killed)");
}

// summary.json is the model's stored form: read back, it is the same summary, and every writer
// gives the same file from it as from the result tree.
TEST(Summary, ReadBackFromSummaryJsonItIsTheSameSummary) {
  for (const char* tree : {"fixtures/run_tree/run20260101000000", "fixtures/run_tree_lenet5/run20261122220000",
                           "fixtures/flagperf_tree/run20221121191924"}) {
    const std::string run = test::test_path(tree);
    const Summary built = build_summary(run);
    const Summary read = Summary::from_json(built.to_json(), "summary.json");
    EXPECT_EQ(read.to_json(), built.to_json()) << tree;
    EXPECT_EQ(summary_markdown(read), summary_markdown(built)) << tree;
    EXPECT_EQ(summary_csv(read), summary_csv(built)) << tree;
    EXPECT_EQ(report_html(read, run), report_html(built, run)) << tree;
  }
}

TEST(Summary, ADamagedSummaryJsonNamesTheFileAndTheKey) {
  const nlohmann::json good = build_summary(test::test_path("fixtures/run_tree/run20260101000000")).to_json();
  auto message = [](const nlohmann::json& j) {
    try {
      Summary::from_json(j, "runs/r1/summary.json");
    } catch (const SummaryError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  nlohmann::json bad = good;
  bad["cases"][1]["rounds"][0]["round"] = "one";
  EXPECT_EQ(message(bad).rfind("runs/r1/summary.json: cases[1].rounds[0].round must be an integer, got \"one\"", 0), 0u)
      << message(bad);
  bad = good;
  bad["cases"][0]["rounds"][2].erase("status");
  EXPECT_EQ(message(bad).rfind("runs/r1/summary.json: cases[0].rounds[2].status is missing", 0), 0u) << message(bad);
  bad = good;
  bad["cases"][0]["rounds"][0]["training_samples_per_second"] = "fast";
  EXPECT_NE(message(bad).find("cases[0].rounds[0].training_samples_per_second must be a number"), std::string::npos)
      << message(bad);
  bad = good;
  bad["schema"] = "xpuperf.summary/0";
  EXPECT_NE(message(bad).find("schema xpuperf.summary/0 is not xpuperf.summary/1"), std::string::npos);
  EXPECT_EQ(message(good), "no error");
}

TEST(Summary, CsvQuotesWhatWouldSplitAField) {
  Summary summary;
  CaseResult c;
  c.key = "lenet5:libtorch:CPU:1:1:2";
  c.family = CaseFamilyKind::Training;
  Round ok;
  ok.number = 1;
  ok.status = "ok";
  ok.converged = true;
  ok.figures["e2e_time"] = 12.5;
  Round failed;
  failed.number = 2;
  failed.status = "failed";
  failed.reason = "rank 1 said \"no\", then\nstopped";
  c.rounds = {ok, failed};
  summary.cases.push_back(c);
  const std::string csv = summary_csv(summary);
  std::istringstream lines(csv);
  std::string header, first;
  std::getline(lines, header);
  std::getline(lines, first);
  EXPECT_EQ(header.rfind("case,family,hardware,nnodes,nproc,round,status,converged,", 0), 0u) << header;
  EXPECT_EQ(first.rfind("lenet5:libtorch:CPU:1:1:2,training,,0,0,1,ok,true,", 0), 0u) << first;
  EXPECT_NE(first.find(",12.5,"), std::string::npos) << first;
  EXPECT_NE(csv.find(",\"rank 1 said \"\"no\"\", then\nstopped\"\n"), std::string::npos) << csv;
  // Every row has the header's columns.
  const auto columns = std::count(header.begin(), header.end(), ',');
  EXPECT_EQ(std::count(first.begin(), first.end(), ','), columns);
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

#include "xpuperf/report/curves.h"
#include "xpuperf/report/html.h"

namespace xpuperf::report {
namespace {

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Chart, NiceTicksCoverTheRangeInRoundSteps) {
  EXPECT_EQ(nice_ticks(0, 1, 5), (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1.0}));
  EXPECT_EQ(nice_ticks(3, 97, 5), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  const auto t = nice_ticks(0.81, 0.93, 5);
  EXPECT_LE(t.front(), 0.81);
  EXPECT_GE(t.back(), 0.93 - 1e-12);
  EXPECT_EQ(nice_ticks(5, 5).size(), 1u);
  EXPECT_EQ(short_number(25557032), "25.6M");
  EXPECT_EQ(short_number(0.8912), "0.891");
  EXPECT_EQ(short_number(12345), "12.3k");
}

TEST(Chart, LineChartsDrawEverySeriesTheTargetAndTheMarkers) {
  LineChart c;
  c.title = "accuracy <eval>";
  c.x_label = "step";
  c.y_label = "accuracy";
  c.series = {{"round 1", {{0, 0.5}, {100, 0.8}, {200, 0.9}}, true}, {"round <2>", {{0, 0.4}, {150, 0.85}}}};
  c.y_line = 0.89;
  c.y_line_label = "target 0.89";
  c.markers = {{200, "target reached at step 200", 0}};
  const std::string html = line_chart_html(c);
  EXPECT_EQ(count_of(html, "\n"), 0u);
  EXPECT_EQ(count_of(html, "<polyline"), 2u);
  EXPECT_EQ(count_of(html, "<circle"), 3u) << "dots only for the series that asks for them";
  EXPECT_EQ(count_of(html, "stroke-dasharray=\"6 4\""), 1u) << "the target line";
  EXPECT_NE(html.find("target reached at step 200"), std::string::npos);
  EXPECT_NE(html.find("<figcaption>accuracy &lt;eval&gt;</figcaption>"), std::string::npos) << html;
  EXPECT_NE(html.find("round &lt;2&gt;</span>"), std::string::npos) << "the legend is HTML, escaped: " << html;
  EXPECT_EQ(html.find("<eval>"), std::string::npos);
  // Every point lies inside the SVG's 720 × 250 box.
  for (auto at = html.find("points=\""); at != std::string::npos; at = html.find("points=\"", at + 1)) {
    std::istringstream points(html.substr(at + 8, html.find('"', at + 8) - at - 8));
    double x = 0, y = 0;
    char comma = 0;
    while (points >> x >> comma >> y) {
      EXPECT_GE(x, 0);
      EXPECT_LE(x, 720);
      EXPECT_GE(y, 0);
      EXPECT_LE(y, 250);
    }
  }
  EXPECT_NE(line_chart_html(LineChart{"empty", "", "", {}, {}, "", {}, false}).find("no samples"), std::string::npos);
}

TEST(Chart, BarsAreScaledToTheLargest) {
  const std::string html = bar_chart_html("energy", {{"round 1", 50, "50 J", false}, {"round 2", 100, "100 J", false}});
  EXPECT_NE(html.find("width:50.0%"), std::string::npos) << html;
  EXPECT_NE(html.find("width:100.0%"), std::string::npos) << html;
}

PerfLogEvent event(const std::string& name, double time_ms, nlohmann::json value) {
  return PerfLogEvent{name, std::move(value), {{"time_ms", time_ms}, {"rank", 0}}, 0};
}

TEST(Curves, TheMomentTheTargetWasReachedIsTheFirstEvaluationPastIt) {
  const std::vector<PerfLogEvent> events = {
      event("INIT_START", 10000, nullptr),
      event("STEP_END", 12000, {{"global_steps", 10}, {"loss", 2.0}, {"samples_per_second", 500.0}}),
      event("EVALUATE", 13000, {{"global_steps", 10}, {"epoch", 0}, {"accuracy", 0.7}}),
      event("STEP_END", 15000, {{"global_steps", 20}, {"loss", 1.0}, {"samples_per_second", 550.0}}),
      event("EVALUATE", 16500, {{"global_steps", 20}, {"epoch", 1}, {"accuracy", 0.9}}),
      event("EVALUATE", 17000, {{"global_steps", 20}, {"epoch", 1}, {"accuracy", 0.95}}),
      event("FINISHED", 17500,
            {{"final_metric", {{"name", "accuracy"}, {"value", 0.95}, {"target", 0.89}}}, {"target_mode", "max"}})};
  const TrainingCurves c = training_curves(events);
  ASSERT_EQ(c.loss.size(), 2u);
  EXPECT_DOUBLE_EQ(c.loss[1].step, 20);
  EXPECT_DOUBLE_EQ(c.loss[1].seconds, 5.0) << "seconds since INIT_START";
  EXPECT_EQ(c.metric_name, "accuracy");
  ASSERT_TRUE(c.target_hit);
  EXPECT_DOUBLE_EQ(c.target_hit->seconds, 6.5);
  EXPECT_DOUBLE_EQ(c.target_hit->value, 0.9);
  const TrainingCurves back = TrainingCurves::from_json(c.to_json());
  EXPECT_EQ(back.metric.size(), 3u);
  EXPECT_EQ(back.throughput.size(), 2u);
  ASSERT_TRUE(back.target_hit);
  EXPECT_DOUBLE_EQ(back.target_hit->step, 20);
  EXPECT_EQ(back.target, 0.89);

  // A loss target is reached from above; without FINISHED the metric is the evaluation's own key.
  const TrainingCurves down = training_curves({event("EVALUATE", 1000, {{"epoch", 0}, {"val_loss", 3.0}}),
                                               event("EVALUATE", 2000, {{"epoch", 1}, {"val_loss", 2.0}})});
  EXPECT_EQ(down.metric_name, "val_loss");
  EXPECT_FALSE(down.higher_is_better);
  EXPECT_FALSE(down.target_hit) << "no target known";
}

TEST(Curves, ThinnedSeriesKeepTheirLastPoint) {
  TrainingCurves c;
  for (int i = 0; i < 1001; ++i) c.loss.push_back({static_cast<double>(i), i * 0.1, 1.0 / (i + 1)});
  const auto j = c.to_json(100);
  EXPECT_LE(j["loss"].size(), 102u);
  EXPECT_EQ(j["loss"].back()[0], 1000);
}

TEST(Html, TheReportOfAResultTreeHasTheTablesTheChartsAndTheFailures) {
  const std::string run = test::test_path("fixtures/run_tree/run20260101000000");
  const std::string html = report_html(build_summary(run), run);
  for (const char* part : {"<!DOCTYPE html>", "<h2>Training</h2>", "lenet5:libtorch:CPU:1:1:5",
                           "Training loss against step", "<polyline", "Power per device", "Memory used per device",
                           "Energy per round", "rank 1 killed by signal 9 (Killed)", "(n = 1)"})
    EXPECT_NE(html.find(part), std::string::npos) << part;
  EXPECT_EQ(html.find("± 0.0"), std::string::npos) << "one round has no spread";
  EXPECT_EQ(html.find("<h2>Inference</h2>"), std::string::npos) << "no inference case in this run";
  // Nothing is fetched from a network: the only addresses are SVG's namespace.
  EXPECT_EQ(count_of(html, "http"), count_of(html, "http://www.w3.org/2000/svg"));
}

TEST(Html, ARealRunHasTimeToTrainCurvesLatencyAndNoConvergedColumnForBaseCases) {
  const std::string run = test::test_path("fixtures/run_tree_lenet5/run20261122220000");
  const Summary summary = build_summary(run);
  const auto lenet5 = summary.to_json()["cases"][5];
  ASSERT_EQ(lenet5["case"], "lenet5:libtorch:CPU:1:1:3");
  for (const auto& r : lenet5["rounds"]) {
    ASSERT_TRUE(r.contains("time_to_target")) << r.dump();
    EXPECT_GT(r["time_to_target"].get<double>(), 1.0);
    EXPECT_LE(r["time_to_target"].get<double>(), r["e2e_time"].get<double>() + 0.01) << "reached before the end";
    EXPECT_GT(r["curves"]["loss"].size(), 10u);
    EXPECT_EQ(r["curves"]["metric"]["mode"], "max");
    EXPECT_EQ(r["curves"]["metric"]["target"], 0.88);
  }
  const std::string html = report_html(summary, run);
  for (const char* part :
       {"<h2>Hardware (base cases)</h2>", "<h2>Training</h2>", "<h2>Inference</h2>", "accuracy against step",
        "accuracy against wall time (time to train)", "target reached at", "target 0.88", "Throughput over the run",
        "Latency of one query at a time, per batch size", "Utilisation per device", "too few to draw"})
    EXPECT_NE(html.find(part), std::string::npos) << part;
  // The base table has no "converged" column; the training table has.
  const std::string base_table =
      html.substr(html.find("<h2>Hardware"), html.find("<h2>Training") - html.find("<h2>Hardware"));
  EXPECT_EQ(base_table.find("converged"), std::string::npos);
  EXPECT_NE(base_table.find("not listed"), std::string::npos) << "the cpu vendor has no datasheet figures";
}

TEST(Html, BaseCasesAreDrawnAgainstTheDatasheet) {
  Summary summary;
  summary.run = "r";
  summary.vendor = "nvidia";
  summary.launcher = "local";
  CaseResult c;
  c.key = "computation-BF16:H100:1:1:1";
  c.family = CaseFamilyKind::Base;
  Round r;
  r.number = 1;
  r.status = "ok";
  r.figure = "median";
  r.unit = "TFLOP/s";
  r.figures["value"] = 700.0;
  r.records["figures"] = {{{"name", "median"}, {"value", 700.0}, {"datasheet_value", 989.4}}};
  c.rounds.push_back(r);
  c.rounds_used = 1;
  c.aggregate["value"] = aggregate({700.0});
  summary.cases.push_back(c);
  const std::string html = report_html(summary, "/nonexistent");
  EXPECT_NE(html.find("Measured, as a share of the vendor's datasheet figure"), std::string::npos) << html;
  EXPECT_NE(html.find("700 of 989 TFLOP/s = 70.7 %"), std::string::npos) << html;
  EXPECT_NE(html.find("<td>70.7 %</td>"), std::string::npos) << html;
}

TEST(Html, OneRoundSaysNEqualsOneInsteadOfAZeroSpread) {
  Aggregate one;
  one.n = 1;
  one.mean = 812.5;
  EXPECT_EQ(mean_and_spread(one, 1), "812.5 (n = 1)");
  one.n = 3;
  one.std = 2.25;
  EXPECT_EQ(mean_and_spread(one, 1), "812.5 ± 2.2");
}

TEST(Html, TheComparisonShowsTheVerdictsAndBothRunsCurves) {
  const std::string run = test::test_path("fixtures/run_tree/run20260101000000");
  const auto summary = build_summary(run);
  const auto rows = compare_summaries(summary, summary);
  const std::string html = compare_html(summary, summary, "runA", "runB", rows, 5);
  for (const char* part : {"<h1>xpuperf compare</h1>", "A: runA", "training_samples_per_second",
                           "no significant change", "A round 2", "B round 2", "Training loss against step"})
    EXPECT_NE(html.find(part), std::string::npos) << part;
}

}  // namespace
}  // namespace xpuperf::report
