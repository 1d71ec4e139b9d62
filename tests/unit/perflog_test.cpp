#include "xpuperf/core/perflog.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "test_util.h"

namespace xpuperf {
namespace {

using nlohmann::json;

TEST(PerfLog, FormatsOneLineInFlagPerfShape) {
  const std::string line =
      format_perflog("STEP_END", {{"loss", 0.5}, {"global_steps", 10}}, "trainer.cpp", 42, 1669034171032, 3);
  EXPECT_EQ(line,
            "[PerfLog] {\"event\":\"STEP_END\",\"metadata\":{\"file\":\"trainer.cpp\",\"lineno\":42,"
            "\"rank\":3,\"time_ms\":1669034171032},\"value\":{\"global_steps\":10,\"loss\":0.5}}");
  EXPECT_EQ(format_perflog("TRAIN_START", nullptr, "t.cpp", 1, 5, 0).find("\"value\""), std::string::npos);
}

TEST(PerfLog, WriterAndParserRoundTrip) {
  std::stringstream log;
  PerfLogWriter writer(log, 1);
  writer.log(perflog_event::kInitStart);
  log << "some other output of the rank\n";
  writer.log(perflog_event::kStepEnd, {{"loss", 1.25}}, "x.cpp", 7);
  const PerfLogParse parsed = parse_perflog(log);
  ASSERT_EQ(parsed.events.size(), 2u);
  EXPECT_EQ(parsed.other_lines, 1);
  EXPECT_EQ(parsed.events[0].event, "INIT_START");
  EXPECT_TRUE(parsed.events[0].value.is_null());
  EXPECT_EQ(parsed.events[1].value["loss"], 1.25);
  EXPECT_EQ(parsed.events[1].metadata["rank"], 1);
  EXPECT_EQ(parsed.events[1].metadata["lineno"], 7);
  EXPECT_EQ(parsed.events[1].line, 3);
  EXPECT_GT(parsed.events[1].metadata["time_ms"].get<std::int64_t>(), 1600000000000);
}

TEST(PerfLog, NonFiniteValuesStayValidJson) {
  const std::string line = format_perflog("STEP_END", {{"loss", std::nan("")}}, "x", 1, 1, 0);
  auto event = parse_perflog_line(line);
  ASSERT_TRUE(event) << line;
  EXPECT_TRUE(event->value["loss"].is_null());
}

TEST(PerfLog, ReadsFlagPerfLogsAndSkipsGarbage) {
  std::ifstream in(test::test_path("fixtures/perflog/flagperf_rank0.out.log"));
  ASSERT_TRUE(in);
  const PerfLogParse parsed = parse_perflog(in);
  std::vector<std::string> names;
  for (const auto& e : parsed.events) names.push_back(e.event);
  EXPECT_EQ(names, (std::vector<std::string>{"STEP_END", "EVALUATE", "EPOCH_END", "TRAIN_END", "FINISHED"}));
  EXPECT_EQ(parsed.other_lines, 3);
  EXPECT_EQ(parsed.broken_lines, std::vector<int>{8});
  EXPECT_EQ(parsed.events[0].value["seq/s"], 822.455385237589);
  EXPECT_EQ(parsed.events[4].metadata["lineno"], 158);
}

TEST(PerfLog, TextBeforeTheTagIsIgnored) {
  auto event = parse_perflog_line("[rank3] 2024-01-01 [PerfLog] {\"event\": \"EVALUATE\", \"value\": {\"acc\": 0.9}}");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, "EVALUATE");
  EXPECT_FALSE(parse_perflog_line("[PerfLog] [1, 2]"));
  EXPECT_FALSE(parse_perflog_line("[PerfLog] {\"value\": 1}"));
  EXPECT_FALSE(parse_perflog_line("no tag here"));
}

TEST(FinishedInfo, ReadsFlagPerfFinished) {
  std::ifstream in(test::test_path("fixtures/perflog/flagperf_rank0.out.log"));
  const PerfLogParse parsed = parse_perflog(in);
  const FinishedInfo info = FinishedInfo::from_json(parsed.events.back().value);
  EXPECT_DOUBLE_EQ(*info.e2e_time, 1661.6114165782928);
  EXPECT_DOUBLE_EQ(*info.training_samples_per_second, 579.0933420700227);
  EXPECT_DOUBLE_EQ(*info.raw_train_time, 1501.713);
  EXPECT_DOUBLE_EQ(*info.init_time, 148.937);
  EXPECT_TRUE(*info.converged);
  ASSERT_TRUE(info.final_metric);
  EXPECT_EQ(info.final_metric->name, "mlm_accuracy");
  EXPECT_DOUBLE_EQ(info.final_metric->value, 0.920166015625);
  EXPECT_FALSE(info.final_metric->target);
  EXPECT_FALSE(info.global_steps);
  EXPECT_DOUBLE_EQ(info.extra["final_loss"].get<double>(), 3.066718101501465);
}

TEST(FinishedInfo, LossAloneIsTheMetric) {
  const FinishedInfo info = FinishedInfo::from_json({{"final_loss", 2.5}});
  ASSERT_TRUE(info.final_metric);
  EXPECT_EQ(info.final_metric->name, "loss");
}

TEST(FinishedInfo, StandardKeysRoundTripAndAreGolden) {
  FinishedInfo info;
  info.e2e_time = 120.5;
  info.init_time = 2.25;
  info.raw_train_time = 110.0;
  info.training_samples_per_second = 5454.5;
  info.converged = true;
  info.final_metric = FinalMetric{"accuracy", 0.8912, 0.89};
  info.global_steps = 9380;
  info.num_trained_samples = 600000;
  info.mfu = 0.012;
  info.extra = {{"vendor_note", "x"}};
  const json out = info.to_json();
  EXPECT_EQ(test::compare_golden("finished_info.json", out.dump(2) + "\n"), "");
  const FinishedInfo back = FinishedInfo::from_json(out);
  EXPECT_EQ(back.to_json(), out);
  EXPECT_EQ(back.final_metric->target, 0.89);
  EXPECT_EQ(back.extra, (json{{"vendor_note", "x"}}));
}

TEST(FinishedInfo, WrongTypesStayVisibleInExtra) {
  const FinishedInfo info = FinishedInfo::from_json({{"converged", "yes"}, {"e2e_time", 3}});
  EXPECT_FALSE(info.converged);
  EXPECT_EQ(info.extra["converged"], "yes");
  EXPECT_DOUBLE_EQ(*info.e2e_time, 3.0);
}

}  // namespace
}  // namespace xpuperf
