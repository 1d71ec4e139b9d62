// `xpuperf sweep`: the strategies' spelling and Rapidformer's table built from the rows'
// measurements (golden files), with loss parity flagged and failed rows kept.

#include "xpuperf/launch/sweep.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "xpuperf/report/sweep_report.h"

namespace xpuperf {
namespace {

using nlohmann::json;

TEST(SweepStrategies, TokensBecomeTheSwitchesTheySet) {
  Diagnostics diags;
  const auto rows =
      parse_strategies(" fp32 ; bf16+zero2+ckpt; bf16+tp1+pp1+train_batch_size=2+global_batch_size=8;", diags);
  EXPECT_FALSE(diags.has_errors()) << diags.format();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "fp32");
  EXPECT_EQ(rows[0].sets, std::vector<std::string>{"precision=fp32"});
  EXPECT_EQ(rows[1].sets,
            (std::vector<std::string>{"precision=bf16", "zero_stage=2", "activation_checkpointing=true"}));
  EXPECT_EQ(rows[2].sets, (std::vector<std::string>{"precision=bf16", "tensor_parallel=1", "pipeline_parallel=1",
                                                    "train_batch_size=2", "global_batch_size=8"}));
}

TEST(SweepStrategies, UnknownAndUnimplementedTokensAreRefusedWithTheReason) {
  Diagnostics diags;
  const auto rows = parse_strategies("bf16+zero4; bf16+pp0; fast; bf16; bf16; moe1", diags);
  const std::string text = diags.format();
  EXPECT_NE(text.find("'moe1': num_local_experts must be 2 or more"), std::string::npos) << text;
  EXPECT_NE(text.find("'zero4': zero_stage must be 0, 1, 2 or 3"), std::string::npos) << text;
  EXPECT_NE(text.find("'pp0': pipeline_parallel must be 1 or more"), std::string::npos) << text;
  EXPECT_NE(text.find("unknown strategy token 'fast'"), std::string::npos) << text;
  EXPECT_NE(text.find("strategy 'bf16' is listed twice"), std::string::npos) << text;
  Diagnostics none;
  parse_strategies(" ; ", none);
  EXPECT_NE(none.format().find("no strategy given"), std::string::npos);
}

TEST(SweepStrategies, AnEmptySwitchOrTwoSwitchesSettingOneKeyAreRefused) {
  for (const std::string text : {"+", "bf16+", "+bf16", "bf16++zero1"}) {
    Diagnostics diags;
    EXPECT_TRUE(parse_strategies(text, diags).empty()) << text;
    EXPECT_NE(diags.format().find("a '+' with no switch on one side"), std::string::npos) << text << diags.format();
  }
  Diagnostics diags;
  EXPECT_TRUE(parse_strategies("zero1+zero3", diags).empty());
  EXPECT_NE(diags.format().find("'zero1' and 'zero3' both set zero_stage"), std::string::npos) << diags.format();
  Diagnostics twice;
  parse_strategies("bf16+precision=fp32", twice);
  EXPECT_NE(twice.format().find("both set precision"), std::string::npos) << twice.format();
}

json round_of(double sps, double mib, std::vector<double> curve) {
  return {{"status", "ok"},     {"samples_per_second", sps},     {"tokens_per_second", sps * 1024},
          {"mfu", sps / 400},   {"peak_device_memory_mib", mib}, {"energy_per_sample_j", 300 / sps},
          {"loss_curve", curve}};
}

TEST(SweepReport, TableHasRatiosAgainstTheReferenceAndFlagsBrokenParity) {
  const std::vector<double> base = {10.0, 9.0, 8.0, 7.5};
  json input = {
      {"case", "gpt2:libtorch"}, {"vendor", "nvidia"}, {"hardware", "H200x1x2"}, {"world_size", 2},      {"steps", 4},
      {"warmup_steps", 2},       {"repeats", 2},       {"loss_tolerance", 0.02}, {"rows", json::array()}};
  input["rows"].push_back({{"name", "fp32"},
                           {"status", "failed"},
                           {"reason", "CUDA out of memory"},
                           {"rounds", json::array({{{"status", "failed"}, {"reason", "CUDA out of memory"}}})}});
  input["rows"].push_back({{"name", "bf16"},
                           {"status", "ok"},
                           {"rounds", json::array({round_of(100, 20000, base), round_of(104, 20100, base)})}});
  input["rows"].push_back({{"name", "bf16+zero1"},
                           {"status", "ok"},
                           {"rounds", json::array({round_of(98, 15000, {10.0, 9.01, 8.02, 7.49}),
                                                   round_of(96, 15000, {10.0, 9.01, 8.02, 7.49})})}});
  input["rows"].push_back({{"name", "bf16+zero2"},
                           {"status", "ok"},
                           {"rounds", json::array({round_of(90, 12000, {10.0, 9.0, 8.5, 7.5})})}});
  const json summary = report::sweep_summary(input);
  EXPECT_EQ(summary["reference"], "bf16") << "the first row that ran";
  EXPECT_NEAR(summary["rows"][2]["speedup"].get<double>(), 97.0 / 102.0, 1e-12);
  EXPECT_NEAR(summary["rows"][2]["memory_saving"].get<double>(), 1.0 - 15000.0 / 20100.0, 1e-12);
  EXPECT_TRUE(summary["rows"][2]["parity"]["within"].get<bool>());
  EXPECT_FALSE(summary["rows"][3]["parity"]["within"].get<bool>());
  EXPECT_EQ(summary["rows"][3]["parity"]["at_step"], 3);
  EXPECT_EQ(test::compare_golden("sweep.md", report::sweep_markdown(summary)), "");
  const std::string html = report::sweep_html(summary);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("CUDA out of memory"), std::string::npos);
}

TEST(SweepReport, ALoraRowIsNotHeldToTheFullModelsLoss) {
  Diagnostics diags;
  const auto rows = parse_strategies("bf16; bf16+lora8; bf16+offload", diags);
  ASSERT_FALSE(diags.has_errors()) << diags.format();
  EXPECT_EQ(rows[1].sets, (std::vector<std::string>{"precision=bf16", "lora_rank=8"}));
  EXPECT_EQ(rows[2].sets, (std::vector<std::string>{"precision=bf16", "offload_optimizer=true"}));
  json input = {{"case", "llama:libtorch"}, {"steps", 2}, {"loss_tolerance", 0.02}, {"rows", json::array()}};
  input["rows"].push_back({{"name", "bf16"},
                           {"sets", {"precision=bf16"}},
                           {"status", "ok"},
                           {"rounds", json::array({round_of(10, 100, {10.0, 9.0})})}});
  input["rows"].push_back({{"name", "bf16+lora8"},
                           {"sets", {"precision=bf16", "lora_rank=8"}},
                           {"status", "ok"},
                           {"rounds", json::array({round_of(30, 50, {10.0, 9.9})})}});
  const json summary = report::sweep_summary(input);
  EXPECT_FALSE(summary["rows"][1].contains("parity"));
  EXPECT_NE(report::sweep_markdown(summary).find("not compared: LoRA trains adapters"), std::string::npos);
  EXPECT_EQ(report::sweep_markdown(summary).find("broke loss parity"), std::string::npos);
}

// Rapidformer's MoE rows: `moe4` is another model (its loss not compared with the dense reference's),
// `moe4+ep2` the same model split over ranks (held to `moe4`'s loss).
TEST(SweepReport, ExpertRowsCompareWithRowsOfTheSameExperts) {
  Diagnostics diags;
  const auto rows = parse_strategies("bf16; bf16+moe4; bf16+moe4+ep2", diags);
  ASSERT_FALSE(diags.has_errors()) << diags.format();
  EXPECT_EQ(rows[2].sets, (std::vector<std::string>{"precision=bf16", "num_local_experts=4", "expert_parallel=2"}));
  const auto row = [](const std::string& name, const std::vector<std::string>& sets, std::vector<double> losses) {
    return json{{"name", name},
                {"sets", sets},
                {"status", "ok"},
                {"rounds", json::array({round_of(10, 100, std::move(losses))})}};
  };
  json input = {{"case", "llama:libtorch"}, {"steps", 2}, {"loss_tolerance", 0.02}, {"rows", json::array()}};
  input["rows"].push_back(row("bf16", rows[0].sets, {10.0, 9.0}));
  input["rows"].push_back(row("bf16+moe4", rows[1].sets, {10.0, 8.0}));
  const json dense_first = report::sweep_summary(input);
  EXPECT_FALSE(dense_first["rows"][1].contains("parity"));
  EXPECT_NE(report::sweep_markdown(dense_first).find("not compared: another model"), std::string::npos);

  // Packed rows are other batches: not compared with padded ones.
  const auto packed = parse_strategies("bf16+pack", diags);
  ASSERT_FALSE(diags.has_errors()) << diags.format();
  EXPECT_EQ(packed[0].sets, (std::vector<std::string>{"precision=bf16", "sequence_packing=true"}));
  input["rows"].push_back(row("bf16+pack", packed[0].sets, {10.0, 9.5}));
  const json with_packing = report::sweep_summary(input);
  EXPECT_FALSE(with_packing["rows"][2].contains("parity"));
  EXPECT_NE(report::sweep_markdown(with_packing).find("not compared: packed rows hold several samples"),
            std::string::npos);
  // offload_overlap's weights are one update late: another training, not compared either.
  const auto overlapped = parse_strategies("bf16+offload+offload_overlap=true", diags);
  ASSERT_FALSE(diags.has_errors()) << diags.format();
  input["rows"].push_back(row("bf16+offload+overlap", overlapped[0].sets, {10.0, 9.4}));
  const json with_overlap = report::sweep_summary(input);
  EXPECT_FALSE(with_overlap["rows"][3].contains("parity"));
  EXPECT_NE(
      report::sweep_markdown(with_overlap).find("not compared: offload_overlap updates the weights one step late"),
      std::string::npos);

  input["rows"] =
      json::array({row("bf16+moe4", rows[1].sets, {10.0, 8.0}), row("bf16+moe4+ep2", rows[2].sets, {10.0, 8.5})});
  const json moe_first = report::sweep_summary(input);
  ASSERT_TRUE(moe_first["rows"][1].contains("parity"));
  EXPECT_NE(report::sweep_markdown(moe_first).find("broke loss parity"), std::string::npos)
      << "the split model is held to the unsplit one's loss";
}

}  // namespace
}  // namespace xpuperf
