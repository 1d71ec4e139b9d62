// The operator census (torchrt/op_census.h) and its replay (opbench/census_replay.h) on the CPU:
// what is recorded of a call, that a replay runs the same operator with the same arguments, the
// formulas, and the arithmetic of a step explained.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "quick_options.h"
#include "test_util.h"
#include "xpuperf/opbench/census_replay.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/op_census.h"

namespace xpuperf::opbench {
namespace {

using torchrt::CensusCall;
using torchrt::OperatorCensus;

const CensusCall* find_call(const std::vector<CensusCall>& calls, const std::string& op, bool backward = false) {
  for (const auto& c : calls)
    if (c.op == op && c.backward == backward) return &c;
  return nullptr;
}

TEST(OperatorCensus, RecordsTheOutermostCallsWithTheirArgumentsAndCounts) {
  const auto a = torch::randn({8, 4}), b = torch::randn({4, 6}), w = torch::randn({6, 4}), bias = torch::randn({6});
  OperatorCensus census;
  for (int i = 0; i < 3; ++i) torch::mm(a, b);
  torch::linear(a, w, bias);  // calls t and addmm inside: only linear is counted
  const auto calls = census.stop();

  const CensusCall* mm = find_call(calls, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->calls, 3);
  ASSERT_EQ(mm->arguments.size(), 2u);
  EXPECT_EQ(mm->arguments[0]["tensor"]["sizes"], nlohmann::json::array({8, 4}));
  EXPECT_EQ(mm->arguments[0]["tensor"]["dtype"], "Float");
  EXPECT_EQ(mm->arguments[0]["tensor"]["on"], "cpu");
  std::string ops;
  for (const auto& c : calls) ops += c.op + " ";
  ASSERT_NE(find_call(calls, "aten::linear"), nullptr) << ops;
  EXPECT_EQ(find_call(calls, "aten::addmm"), nullptr) << "a call made by another operator is not the step's";
  EXPECT_EQ(find_call(calls, "aten::t"), nullptr);
}

TEST(OperatorCensus, MarksTheCallsABackwardMade) {
  const auto x = torch::randn({16, 8}, torch::requires_grad());
  const auto w = torch::randn({8, 4}, torch::requires_grad());
  const auto loss = torch::mm(x, w).sum();
  OperatorCensus census;
  loss.backward();
  const auto calls = census.stop();
  const CensusCall* mm = find_call(calls, "aten::mm", true);
  ASSERT_NE(mm, nullptr) << "the backward's products";
  EXPECT_TRUE(mm->backward);
  EXPECT_EQ(find_call(calls, "aten::mm", false), nullptr);
}

// A C++ autograd function whose backward launches its kernels itself (here: none at all).
struct PassThrough : torch::autograd::Function<PassThrough> {
  static torch::Tensor forward(torch::autograd::AutogradContext*, const torch::Tensor& x) { return x.clone(); }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list grads) {
    return {grads[0]};
  }
};

// One that allocates its gradient through the dispatcher and fills it itself, as a fused kernel
// does: still its own kernels' time in no call.
struct AllocatesThenWrites : torch::autograd::Function<AllocatesThenWrites> {
  static torch::Tensor forward(torch::autograd::AutogradContext*, const torch::Tensor& x) { return x.clone(); }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list grads) {
    torch::Tensor out = torch::empty_like(grads[0]);
    const auto in = grads[0].accessor<float, 1>();  // read through its strides: no operator
    for (std::int64_t i = 0; i < out.numel(); ++i) out.data_ptr<float>()[i] = in[i];
    return {out};
  }
};

// And one whose backward computes through ATen: its calls hold its time.
struct Doubles : torch::autograd::Function<Doubles> {
  static torch::Tensor forward(torch::autograd::AutogradContext*, const torch::Tensor& x) { return x * 2; }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list grads) {
    return {grads[0] * 2};
  }
};

TEST(OperatorCensus, ABackwardThatOnlyAllocatesIsOpaqueOneThatComputesIsNot) {
  const auto x = torch::randn({4}, torch::requires_grad());
  const auto loss = (AllocatesThenWrites::apply(x) + Doubles::apply(x)).sum();
  OperatorCensus census;
  loss.backward();
  census.stop();
  const auto opaque = census.opaque_backward();
  EXPECT_EQ(opaque.count("AllocatesThenWrites"), 1u);
  EXPECT_EQ(opaque.count("Doubles"), 0u);
}

TEST(OperatorCensus, NamesTheCustomBackwardsThatCallNoOperator) {
  const auto x = torch::randn({4}, torch::requires_grad());
  const auto loss = PassThrough::apply(x).sum();
  OperatorCensus census;
  loss.backward();
  census.stop();
  const auto opaque = census.opaque_backward();
  ASSERT_EQ(opaque.count("PassThrough"), 1u) << "its time is in the step and in no call";
  EXPECT_EQ(opaque.at("PassThrough"), 1);
  EXPECT_EQ(opaque.size(), 1u) << "ATen's own nodes are not custom functions";
  torchrt::Census c;
  c.opaque_backward = opaque;
  EXPECT_EQ(torchrt::Census::from_json(c.to_json(), "f").opaque_backward, opaque);
}

TEST(OperatorCensus, OneAtATimeAndNothingAfterStop) {
  OperatorCensus census;
  EXPECT_THROW(OperatorCensus second, std::logic_error);
  census.stop();
  torch::relu(torch::randn({4}));
  EXPECT_TRUE(census.stop().empty());
  OperatorCensus again;  // the first one has stopped
  torch::relu(torch::randn({4}));
  EXPECT_NE(find_call(again.stop(), "aten::relu"), nullptr);
}

TEST(OperatorCensus, CallsThatDifferOnlyInAFloatingScalarAreOne) {
  const auto x = torch::randn({4});
  OperatorCensus census;
  x.mul(0.5);  // a learning rate that changes every step
  x.mul(0.25);
  x.mul(2);  // an integer is part of what the call is
  const auto calls = census.stop();
  int muls = 0;
  for (const auto& c : calls) muls += c.op == "aten::mul" ? 1 : 0;
  EXPECT_EQ(muls, 2);
  const CensusCall* first = find_call(calls, "aten::mul");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->calls, 2);
  EXPECT_EQ(first->arguments[1]["double"], 0.5) << "the first one's value";
}

TEST(OperatorCensus, AFolderWithTheCensusesOfSeveralCasesIsAChoiceToMake) {
  test::TempDir dir;
  auto census_of = [](const std::string& what) {
    torchrt::Census c;
    c.what = what;
    return c.to_json().dump();
  };
  dir.write("round1/rank0.json", census_of("gpt2 on cuda"));
  dir.write("round2/rank0.json", census_of("gpt2 on cuda"));
  EXPECT_EQ(read_census(dir.path()).what, "gpt2 on cuda") << "the rounds of one case: the first";
  dir.write("round3/rank0.json", census_of("llama on cuda"));
  try {
    read_census(dir.path());
    FAIL() << "two cases";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("holds the censuses of 2 cases: name one's log instead"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("(llama on cuda)"), std::string::npos) << e.what();
  }
}

TEST(OperatorCensus, InfinitiesAreWrittenAsStringsAndReplayed) {
  const auto x = torch::randn({4, 4});
  const auto mask = x > 0;
  OperatorCensus census;
  x.masked_fill(mask, -INFINITY);
  const auto calls = census.stop();
  const CensusCall* fill = find_call(calls, "aten::masked_fill");
  ASSERT_NE(fill, nullptr);
  EXPECT_EQ(fill->arguments.back()["double"], "-inf");
  // Through JSON and back, as a census file carries it.
  const CensusCall read = CensusCall::from_json(nlohmann::json::parse(fill->to_json().dump()));
  const OperatorRow row = replay_call(read, 1, torch::kCPU, quick_options());
  EXPECT_GT(row.median_ms, 0);
}

TEST(OperatorCensus, CallTextShowsDtypesSizesAndStridesThatAreNotContiguous) {
  const auto a = torch::randn({8, 4});
  OperatorCensus census;
  torch::mm(a.t(), a);
  const auto calls = census.stop();
  const CensusCall* mm = find_call(calls, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(torchrt::census_call_text(*mm), "cpu:fp32[4,8]s[1,4], cpu:fp32[8,4]");
  EXPECT_EQ(torchrt::census_call_text(*mm, 10), "cpu:fp32[4…");
}

TEST(OperatorCensus, ACensusGoesThroughJsonAndABadOneIsAClearError) {
  torchrt::Census c;
  c.what = "toy on cpu";
  c.units = 2;
  c.step_ms = 1.5;
  c.step_ms_source = "measured";
  CensusCall call;
  call.op = "aten::relu";
  call.arguments = nlohmann::json::array({{{"tensor", {{"sizes", {3}}, {"strides", {1}}, {"dtype", "Float"}}}}});
  call.calls = 4;
  call.autocast = "BFloat16";
  c.calls.push_back(call);
  const torchrt::Census back = torchrt::Census::from_json(c.to_json(), "f.json");
  EXPECT_EQ(back.what, "toy on cpu");
  EXPECT_EQ(back.units, 2);
  EXPECT_EQ(*back.step_ms, 1.5);
  ASSERT_EQ(back.calls.size(), 1u);
  EXPECT_EQ(back.calls[0].calls, 4);
  EXPECT_EQ(back.calls[0].autocast, "BFloat16");
  try {
    torchrt::Census::from_json({{"units", 1}}, "broken.json");
    FAIL() << "no calls";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("broken.json: not an operator census"), std::string::npos) << e.what();
  }
}

TEST(CensusReplay, ReplaysTheRecordedCallWithItsFormulas) {
  const auto a = torch::randn({32, 16}), b = torch::randn({16, 24});
  OperatorCensus census;
  torch::mm(a, b);
  const auto calls = census.stop();
  const OperatorRow row = replay_call(calls.at(0), 2, torch::kCPU, quick_options());
  EXPECT_EQ(row.op, "aten::mm");
  EXPECT_EQ(row.dtype, "fp32");
  EXPECT_EQ(row.call, "cpu:fp32[32,16], cpu:fp32[16,24]");
  EXPECT_EQ(row.calls_per_step, 2);
  EXPECT_TRUE(row.flops_known);
  EXPECT_EQ(row.flops, 2.0 * 32 * 24 * 16);
  EXPECT_EQ(row.bytes, 4.0 * (32 * 16 + 16 * 24 + 32 * 24));  // inputs read, the output written
  EXPECT_GT(row.median_ms, 0);
  EXPECT_GT(row.samples, 0);
}

TEST(CensusReplay, AnOperatorThisProcessLacksIsAClearError) {
  CensusCall call;
  call.op = "nobody::frobnicate";
  call.arguments = nlohmann::json::array();
  try {
    replay_call(call, 1, torch::kCPU, quick_options());
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not an operator of this process"), std::string::npos) << e.what();
  }
}

TEST(CensusReplay, ConvolutionAndAttentionFlopsComeFromTheirArguments) {
  auto tensor = [](std::vector<std::int64_t> sizes) {
    return nlohmann::json{{"tensor", {{"sizes", sizes}, {"strides", sizes}, {"dtype", "Float"}}}};
  };
  CensusCall conv;
  conv.op = "aten::conv2d";
  conv.arguments = {tensor({2, 3, 32, 32}), tensor({8, 3, 3, 3}), {{"none", true}}, {{"ints", {2, 2}}},
                    {{"ints", {1, 1}}},     {{"ints", {1, 1}}},   {{"int", 1}}};
  const std::vector<std::string> conv_names = {"input", "weight", "bias", "stride", "padding", "dilation", "groups"};
  // Output 2×8×16×16, each 3·3·3 multiply-adds.
  EXPECT_EQ(*census_call_flops(conv, conv_names), 2.0 * 2 * 8 * 16 * 16 * 27);

  CensusCall attention;
  attention.op = "aten::scaled_dot_product_attention";
  attention.arguments = {tensor({2, 4, 128, 64}), tensor({2, 4, 256, 64}), tensor({2, 4, 256, 64}),
                         {{"none", true}},        {{"double", 0.0}},       {{"bool", true}}};
  const std::vector<std::string> names = {"query", "key", "value", "attn_mask", "dropout_p", "is_causal"};
  EXPECT_EQ(*census_call_flops(attention, names), 4.0 * 2 * 4 * 128 * 256 * 64 / 2);
  attention.op = "aten::_scaled_dot_product_flash_attention_backward";
  attention.arguments.insert(attention.arguments.begin(), tensor({2, 4, 128, 64}));  // grad_out first
  EXPECT_EQ(*census_call_flops(attention, {"grad_out", "query", "key", "value", "attn_mask", "dropout_p", "is_causal"}),
            2.5 * 4.0 * 2 * 4 * 128 * 256 * 64 / 2);

  CensusCall relu;
  relu.op = "aten::relu";
  relu.arguments = {tensor({4})};
  EXPECT_FALSE(census_call_flops(relu, {"self"}).has_value());
}

// A device graph that replays by running its work again: the graph mode's arithmetic on the CPU
// (NVIDIA's plug-in registers CUDA graphs).
class RerunGraph : public torchrt::DeviceGraph {
 public:
  explicit RerunGraph(int* captures) : captures_(captures) {}
  void capture(const std::function<void()>& work) override {
    work_ = work;
    ++*captures_;
  }
  void replay() override { work_(); }

 private:
  std::function<void()> work_;
  int* captures_;
};

TEST(CensusReplay, TheGraphModeTimesACallWithinAReplayedGraph) {
  OperatorCensus census;
  torch::mm(torch::randn({32, 16}), torch::randn({16, 8}));
  const auto calls = census.stop();
  MeasureOptions options = quick_options();
  options.graph_calls = 4;
  OperatorRow row = replay_call(calls.at(0), 1, torch::kCPU, options);
  EXPECT_FALSE(row.graph_ms.has_value());
  EXPECT_EQ(row.graph_note, "no device graphs on cpu (its vendor brings none)");

  static int captures = 0;
  torchrt::register_device_graphs(c10::DeviceType::CPU, [](const torch::Device&, const torchrt::DeviceGraph*) {
    return std::make_unique<RerunGraph>(&captures);
  });
  row = replay_call(calls.at(0), 1, torch::kCPU, options);
  EXPECT_EQ(captures, 1);
  ASSERT_TRUE(row.graph_ms.has_value()) << row.graph_note;
  EXPECT_GT(*row.graph_ms, 0);
  EXPECT_TRUE(row.to_json().contains("graph_ms"));
}

TEST(CensusReplay, TheStepIsExplainedByCallsTimesTimeWithTheCostliestFirst) {
  torchrt::Census census;
  census.units = 2;
  census.step_ms = 10;
  CensusCall a, b, host;
  a.calls = 8;     // 4 a step
  b.calls = 2;     // 1 a step
  host.calls = 6;  // 3 a step, on the host
  census.calls = {a, b, host};
  std::vector<OperatorRow> rows(2);
  rows[0].calls_per_step = 4;
  rows[0].median_ms = 0.5;  // 2 ms a step
  rows[0].measured_fraction = 0.9;
  rows[1].calls_per_step = 1;
  rows[1].median_ms = 6;  // 6 ms a step
  rows[1].measured_fraction = 0.3;
  rows[0].warm_ms = 0.25;
  rows[1].warm_ms = 5;
  rows[0].host_ms = 0.01;  // the host issues 4 a step in 0.04 ms
  rows[1].host_ms = 0.02;
  const Explanation e = explain(rows, census, 10, 3);
  EXPECT_DOUBLE_EQ(e.host_issue_ms, 0.06);
  EXPECT_DOUBLE_EQ(*e.explained_warm_ms, 6);
  EXPECT_DOUBLE_EQ(*e.warm_share, 0.6);
  EXPECT_DOUBLE_EQ(e.explained_ms, 8);
  EXPECT_DOUBLE_EQ(*e.share, 0.8);
  EXPECT_DOUBLE_EQ(e.replayed_calls, 5);
  EXPECT_DOUBLE_EQ(e.host_calls, 3);
  EXPECT_DOUBLE_EQ(e.unreplayed_calls, 0);
  EXPECT_EQ(e.top, (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(e.below_half, (std::vector<std::size_t>{1}));
  EXPECT_EQ(explain(rows, census, 1).top.size(), 1u);
  rows[0].op = rows[1].op = "aten::mm";
  const auto totals = by_operator(rows);
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_DOUBLE_EQ(totals[0].calls, 5);
  EXPECT_DOUBLE_EQ(totals[0].ms, 8);
  const std::string md = explanation_markdown(e, rows, census);
  EXPECT_NE(md.find("| aten::mm | 5.0 | 8.000 | 100.0 % |"), std::string::npos) << md;
  EXPECT_NE(md.find("| explained | 80.0 % |"), std::string::npos) << md;
  EXPECT_NE(md.find("| explained, warm | 60.0 % |"), std::string::npos) << md;
  EXPECT_NE(md.find("the step waits for the host) | 0.060 |"), std::string::npos) << md;
}

}  // namespace
}  // namespace xpuperf::opbench
