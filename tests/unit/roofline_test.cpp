// The roofline operator rows are placed on (core/roofline.h), the roof a run's base cases measured
// (report/measured_roof.h), an operator case's rows over its rounds (report/operator_rows.h), their
// comparison between runs and their chart.

#include "xpuperf/core/roofline.h"

#include <gtest/gtest.h>

#include "xpuperf/report/compare.h"
#include "xpuperf/report/measured_roof.h"
#include "xpuperf/report/operator_html.h"
#include "xpuperf/report/operator_rows.h"
#include "xpuperf/report/summary_csv.h"

namespace xpuperf {
namespace {

using nlohmann::json;
using report::CaseFamilyKind;
using report::CaseResult;
using report::Round;
using report::Summary;

constexpr double kMmFlops = 2.0 * 8192 * 8192 * 8192;
constexpr double kMmBytes = 3.0 * 8192 * 8192 * 2;
constexpr double kAddBytes = 3.0 * 268435456 * 2;

Roof h200_datasheet() {
  return datasheet_roof(
      YAML::Load("name: NVIDIA H200 SXM 141GB\npeak_tflops: {fp32: 67, bf16: 989.4}\n"
                 "memory_bandwidth_gbps: 4800\n"));
}

TEST(Roofline, TheDatasheetRoofIsTheChipsPeaksAndBandwidth) {
  const Roof roof = h200_datasheet();
  EXPECT_DOUBLE_EQ(roof.peak_tflops.at("bf16"), 989.4);
  EXPECT_DOUBLE_EQ(roof.bandwidth_gbps, 4800);
  EXPECT_EQ(roof.source, "datasheet: NVIDIA H200 SXM 141GB");
  EXPECT_TRUE(datasheet_roof(YAML::Node()).empty());
  EXPECT_EQ(Roof::from_json(roof.to_json()).peak_tflops, roof.peak_tflops);
  EXPECT_TRUE(Roof::from_json(json("garbage")).empty());
}

TEST(Roofline, ARowsLeastTimeIsItsSlowerSide) {
  const Roof roof = h200_datasheet();
  // A GEMM of 8192³ is bound by compute: 1.1 TFLOP at 989.4 TFLOP/s.
  EXPECT_NEAR(*roof_ms(roof, "bf16", kMmFlops, kMmBytes), kMmFlops / 989.4e12 * 1e3, 1e-9);
  EXPECT_TRUE(compute_bound(roof, "bf16", kMmFlops, kMmBytes));
  EXPECT_NEAR(*roof_fraction(roof, "bf16", kMmFlops, kMmBytes, 1.6378), 1.1113 / 1.6378, 1e-3);
  // An add is bound by memory: 1.6 GB at 4.8 TB/s.
  const double add_flops = 268435456;
  EXPECT_NEAR(*roof_ms(roof, "bf16", add_flops, kAddBytes), kAddBytes / 4800e9 * 1e3, 1e-9);
  EXPECT_FALSE(compute_bound(roof, "bf16", add_flops, kAddBytes));
  // A side the roof lacks is left out (the fraction can only come out lower); with neither side,
  // or no time, no fraction rather than a wrong one.
  EXPECT_NEAR(*roof_ms(roof, "fp16", kMmFlops, kMmBytes), kMmBytes / 4800e9 * 1e3, 1e-9);
  Roof compute_only = roof;
  compute_only.bandwidth_gbps = 0;
  EXPECT_NEAR(*roof_ms(compute_only, "bf16", kMmFlops, kMmBytes), kMmFlops / 989.4e12 * 1e3, 1e-9);
  EXPECT_FALSE(roof_ms(compute_only, "fp16", kMmFlops, kMmBytes));
  EXPECT_FALSE(roof_fraction(roof, "bf16", kMmFlops, kMmBytes, 0));
  EXPECT_FALSE(roof_ms(Roof{}, "bf16", 0, kAddBytes));
}

json figure(const std::string& name, double value) {
  return {{"name", name}, {"value", value}, {"unit", "GB/s"}};
}

CaseResult base_case(const std::string& model, const std::string& hardware, std::vector<Round> rounds) {
  CaseResult c;
  c.key = model + ":" + hardware + ":1:1:" + std::to_string(rounds.size());
  c.family = CaseFamilyKind::Base;
  c.model = model;
  c.hardware = hardware;
  c.rounds = std::move(rounds);
  return c;
}

Round gemm_round(double tflops, const std::string& status = "ok", bool correct = true) {
  Round r;
  r.status = status;
  r.correct = correct;
  r.figures["value"] = tflops;
  return r;
}

Round bandwidth_round(double read, double copy, double triad, double write) {
  Round r;
  r.status = "ok";
  r.records["figures"] =
      json::array({figure("read", read + 100), figure("read median", read), figure("write median", write),
                   figure("copy median", copy), figure("triad median", triad)});
  return r;
}

json mm_row(double ms, bool accurate = true) {
  return {{"op", "mm"},
          {"shape", {8192, 8192, 8192}},
          {"dtype", "bf16"},
          {"implementation", "aten"},
          {"median_ms", ms},
          {"flops", kMmFlops},
          {"bytes", kMmBytes},
          {"checked", true},
          {"accurate", accurate},
          {"deterministic", true},
          {"error", {{"max_abs", 0.5}, {"max_rel", 0.01}, {"worst_over_tolerance", 0.2}}}};
}

Round operator_round(int number, std::vector<json> rows) {
  Round r;
  r.number = number;
  r.status = "ok";
  r.records["operators"] = rows;
  r.records["datasheet_roof"] = h200_datasheet().to_json();
  return r;
}

CaseResult mm_case(std::vector<Round> rounds) {
  CaseResult c;
  c.key = "mm:H200:" + std::to_string(rounds.size());
  c.family = CaseFamilyKind::Operation;
  c.model = "mm";
  c.framework = "op";
  c.hardware = "H200";
  c.nnodes = c.nproc = 1;
  c.rounds = std::move(rounds);
  return c;
}

Summary a_run() {
  Summary s;
  s.run = "run1";
  s.cases.push_back(
      base_case("computation-BF16", "H200",
                {gemm_round(780), gemm_round(782), gemm_round(1, "failed"), gemm_round(900, "ok", false)}));
  s.cases.push_back(base_case("computation-BF16", "H100", {gemm_round(600)}));
  s.cases.push_back(base_case("main_memory-bandwidth", "H200", {bandwidth_round(4266, 4039, 4268, 4481)}));
  s.cases.push_back(mm_case({operator_round(1, {mm_row(1.64)}), operator_round(2, {mm_row(1.66)})}));
  return s;
}

TEST(MeasuredRoof, IsTheRunsBaseCasesOnThatChip) {
  const Roof roof = report::measured_roof(a_run(), "H200");
  // The ok rounds whose check passed, averaged; the H100's case is another chip's.
  EXPECT_DOUBLE_EQ(roof.peak_tflops.at("bf16"), 781);
  // The fastest of read, copy and triad: a write alone is not what an operator does.
  EXPECT_DOUBLE_EQ(roof.bandwidth_gbps, 4268);
  EXPECT_EQ(roof.source, "measured: computation-BF16, main_memory-bandwidth of run run1");
  EXPECT_TRUE(report::measured_roof(a_run(), "A100").empty());
}

TEST(OperatorRows, ARowsTimeIsTakenOverTheRoundsAndPlacedOnBothRoofs) {
  const Summary s = a_run();
  const auto rows = report::operator_rows(s.cases[3], report::measured_roof(s, "H200"));
  ASSERT_EQ(rows.size(), 1u);
  const auto& r = rows[0];
  EXPECT_EQ(r.key, "mm 8192×8192×8192 bf16 aten");
  EXPECT_EQ(r.time.n, 2u);
  EXPECT_NEAR(r.time.mean, 1.65, 1e-12);
  EXPECT_NEAR(r.tflops, kMmFlops / 1.65e-3 / 1e12, 1e-6);
  EXPECT_NEAR(*r.measured_fraction, kMmFlops / 781e12 * 1e3 / 1.65, 1e-9);
  EXPECT_NEAR(*r.datasheet_fraction, kMmFlops / 989.4e12 * 1e3 / 1.65, 1e-9);
  EXPECT_TRUE(r.accurate);
  EXPECT_EQ(report::fraction_text(r.measured_fraction), "85.3 %");
  EXPECT_EQ(report::fraction_text(std::nullopt), "–");
}

// A collective's row is placed on the interconnect by its bus bandwidth: the datasheet's NVLink
// rate, and the run's interconnect-allreduce at its largest size.
TEST(OperatorRows, ACollectiveIsPlacedOnTheInterconnectByItsBusBandwidth) {
  Roof datasheet = datasheet_roof(YAML::Load("name: H200\ninterconnect: {unidirectional_gbps: 450}\n"));
  EXPECT_DOUBLE_EQ(datasheet.interconnect_gbps, 450);
  EXPECT_DOUBLE_EQ(Roof::from_json(datasheet.to_json()).interconnect_gbps, 450);
  Summary s = a_run();
  s.cases.push_back(base_case("interconnect-allreduce", "H200", {gemm_round(360), gemm_round(364)}));
  const Roof measured = report::measured_roof(s, "H200");
  EXPECT_DOUBLE_EQ(measured.interconnect_gbps, 362);
  EXPECT_NE(measured.source.find("interconnect-allreduce"), std::string::npos) << measured.source;
  // 256 MiB summed over 2 ranks in 1 ms: algbw 268.4 GB/s, busbw 268.4 (factor 2(n-1)/n = 1).
  const json row = {{"op", "all_reduce"},   {"shape", {67108864}},
                    {"dtype", "fp32"},      {"implementation", "c10d nccl"},
                    {"median_ms", 1.0},     {"flops", 0},
                    {"bytes", 268435456.0}, {"ranks", 2},
                    {"bus_factor", 1.0},    {"algorithm", "RING/SIMPLE"},
                    {"checked", true},      {"accurate", true}};
  Round round = operator_round(1, {row});
  round.records["datasheet_roof"] = datasheet.to_json();
  CaseResult c = mm_case({round});
  const auto rows = report::operator_rows(c, measured);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NEAR(rows[0].bus_gb_per_s, 268.435456, 1e-9);
  EXPECT_NEAR(*rows[0].datasheet_fraction, 268.435456 / 450, 1e-9);
  EXPECT_NEAR(*rows[0].measured_fraction, 268.435456 / 362, 1e-9);
  EXPECT_FALSE(interconnect_fraction(Roof{}, 100)) << "no interconnect figure, no fraction";
}

TEST(OperatorRows, AnotherImplementationGetsItsSpeedupUnlessARowIsInaccurate) {
  json xpuperf = mm_row(1.25);
  xpuperf["implementation"] = "xpuperf";
  auto rows = report::operator_rows(mm_case({operator_round(1, {mm_row(1.5), xpuperf})}), Roof{});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_FALSE(rows[0].speedup);
  EXPECT_EQ(report::speedup_text(rows[0]), "–");
  EXPECT_NEAR(*rows[1].speedup, 1.2, 1e-12);
  EXPECT_EQ(report::speedup_text(rows[1]), "1.20×");
  xpuperf["accurate"] = false;
  rows = report::operator_rows(mm_case({operator_round(1, {mm_row(1.5), xpuperf})}), Roof{});
  EXPECT_FALSE(rows[1].speedup);
  EXPECT_EQ(report::speedup_text(rows[1]), "void: this row is inaccurate");
  xpuperf["accurate"] = true;
  rows = report::operator_rows(mm_case({operator_round(1, {mm_row(1.5, false), xpuperf})}), Roof{});
  EXPECT_EQ(report::speedup_text(rows[1]), "void: ATen's row is inaccurate");
}

TEST(OperatorRows, EachRoundsRowIsALineOfOperatorsCsv) {
  const std::string csv = report::operators_csv(a_run());
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "case,round,op,shape,dtype,implementation,median_ms,p10_ms,p90_ms,cv,samples,device_timed,host_ms,"
            "cold_ms,flops,bytes,tflops,gb_per_s,intensity,datasheet_fraction,measured_fraction,energy_per_call_j,"
            "max_abs_error,max_rel_error,worst_over_tolerance,checked,accurate,deterministic,ranks,bus_gb_per_s,"
            "algorithm");
  EXPECT_NE(csv.find("\nmm:H200:2,1,mm,8192×8192×8192,bf16,aten,1.64,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nmm:H200:2,2,mm,8192×8192×8192,bf16,aten,1.66,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",0.5,0.01,0.2,true,true,true,,,\n"), std::string::npos) << csv;
}

TEST(OperatorRows, TwoRunsAreComparedRowByRow) {
  const Summary a = a_run();
  Summary b = a_run();
  b.cases[3] = mm_case({operator_round(1, {mm_row(1.40)}), operator_round(2, {mm_row(1.41)})});
  const auto rows = report::compare_summaries(a, b);
  const auto it = std::find_if(rows.begin(), rows.end(),
                               [](const auto& r) { return r.figure == "mm 8192×8192×8192 bf16 aten ms"; });
  ASSERT_NE(it, rows.end());
  EXPECT_FALSE(it->higher_is_better);
  EXPECT_NEAR(it->ratio, 1.405 / 1.65, 1e-9);
  EXPECT_TRUE(it->significant);
  EXPECT_EQ(report::verdict(*it, -1), "better (significant)");
}

TEST(OperatorRows, TheRooflineDrawsADotARowAndARoofADtype) {
  const Summary s = a_run();
  auto rows = report::operator_rows(s.cases[3], report::measured_roof(s, "H200"));
  std::string svg = report::roofline_svg(rows, h200_datasheet(), report::measured_roof(s, "H200"));
  EXPECT_NE(svg.find("<circle"), std::string::npos);
  EXPECT_NE(svg.find("mm 8192×8192×8192 bf16 aten: 666 TFLOP/s"), std::string::npos) << svg;
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);  // the datasheet's roof
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n'), 0);
  std::size_t roofs = 0;
  for (auto at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++roofs;
  EXPECT_EQ(roofs, 2u);
  // A row that failed its accuracy check is an open dot.
  Summary bad = a_run();
  bad.cases[3] = mm_case({operator_round(1, {mm_row(1.64, false)})});
  rows = report::operator_rows(bad.cases[3], Roof{});
  svg = report::roofline_svg(rows, h200_datasheet(), Roof{});
  EXPECT_NE(svg.find("fill=\"#fff\""), std::string::npos);
  EXPECT_EQ(report::roofline_svg({}, h200_datasheet(), Roof{}), "");
}

}  // namespace
}  // namespace xpuperf
