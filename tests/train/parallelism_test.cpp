// The switches that change how a step is computed, held to the plain run's numbers on a small GPT:
// ZeRO stages 1, 2 and 3 against data parallelism (Gloo, two and three ranks as threads), gradient
// accumulation against one batch as large, activation checkpointing against keeping the
// activations (same gradients, dropout included), tensor and pipeline parallelism against the
// unsplit model. And the combinations refused at load time.

#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <sstream>

#include "ranks_util.h"
#include "toy_case.h"
#include "xpuperf/core/perflog.h"
#include "xpuperf/core/training_switches.h"
#include "xpuperf/models/bert.h"
#include "xpuperf/models/gpt.h"
#include "xpuperf/models/llama.h"
#include "xpuperf/parallel/model_parallel.h"
#include "xpuperf/parallel/zero.h"
#include "xpuperf/train/runtime.h"

namespace xpuperf::train {
// The tests drive the layers below the runtime directly.
using namespace xpuperf::parallel;
using namespace xpuperf::torchrt;
namespace {

models::GptConfig tiny_gpt(double dropout) {
  models::GptConfig c;
  c.vocab = 64;
  c.positions = 16;
  c.layers = 2;
  c.hidden = 32;
  c.heads = 2;
  c.dropout = dropout;
  return c;
}

// Sequences with a rule to learn (each token follows from the one before), 64 of 17 tokens.
torch::Tensor rule_tokens() {
  auto gen = at::detail::createCPUGenerator(11);
  auto ids = torch::empty({64, 17}, torch::kLong);
  auto start = torch::randint(64, {64}, gen);
  for (std::int64_t i = 0; i < 64; ++i) {
    std::int64_t t = start[i].item<std::int64_t>();
    for (std::int64_t j = 0; j < 17; ++j, t = (t * 5 + 3) % 64) ids[i][j] = t;
  }
  return ids;
}

// A tiny decoder on the rule tokens.
class TinyDecoderCase : public TrainingCase {
 public:
  Datasets datasets(const CaseContext&) override {
    auto ids = rule_tokens();
    return {std::make_shared<TensorDataset>(std::vector<torch::Tensor>{ids}, "rule tokens (synthetic)"),
            std::make_shared<TensorDataset>(std::vector<torch::Tensor>{ids.narrow(0, 0, 16)}, "rule tokens")};
  }
  std::shared_ptr<torch::nn::Module> model(const CaseContext& ctx) override {
    // Ranks are threads here and share the default generator: build every model from one seed.
    static std::mutex building;
    std::lock_guard<std::mutex> lock(building);
    torch::manual_seed(42);
    auto built = build(ctx);
    built->to(ctx.device);
    return built;
  }
  torch::Tensor forward_step(const Batch& batch) override { return loss(batch[0]); }
  void evaluate(const Batch& batch, MetricSums& sums) override {
    const auto n = static_cast<double>(batch[0].size(0));
    sums.add("loss", loss(batch[0]).item<double>() * n, n);
  }

 protected:
  virtual std::shared_ptr<torch::nn::Module> build(const CaseContext& ctx) = 0;
  // The mean next-token loss of ids[:, 1:] from ids[:, :-1].
  virtual torch::Tensor loss(const torch::Tensor& ids) = 0;
};

class TinyGptCase : public TinyDecoderCase {
  std::shared_ptr<torch::nn::Module> build(const CaseContext& ctx) override {
    gpt = models::GptLMHeadModel(tiny_gpt(ctx.config.get_number("dropout", 0.0)));
    // With the kernels' switch (ATen's operators on the CPU), each residual add joins the norm after it.
    gpt->fused_kernels = ctx.config.get_bool("fused_kernels", false);
    return gpt.ptr();
  }
  torch::Tensor loss(const torch::Tensor& ids) override { return gpt->loss(ids); }
  models::GptLMHeadModel gpt{nullptr};
};

// The tiny GPT as a model that splits its layers but not its sequence (as ViT's).
struct GptKeepingWholeSequences : models::GptLMHeadModelImpl {
  using GptLMHeadModelImpl::GptLMHeadModelImpl;
  bool takes_sequence_parallel() const override { return false; }
};

class TinyGptKeepingWholeSequencesCase : public TinyDecoderCase {
  std::shared_ptr<torch::nn::Module> build(const CaseContext&) override {
    gpt = std::make_shared<GptKeepingWholeSequences>(tiny_gpt(0.0));
    return gpt;
  }
  torch::Tensor loss(const torch::Tensor& ids) override { return gpt->loss(ids); }
  std::shared_ptr<GptKeepingWholeSequences> gpt;
};

// The same rule tokens through a tiny Llama (RMSNorm, rotary positions, SwiGLU, grouped-query
// attention: 4 query heads over 2 key/value heads, an untied output layer).
models::LlamaConfig tiny_llama(std::int64_t intermediate) {
  models::LlamaConfig c;
  c.vocab = 64;
  c.hidden = 32;
  c.intermediate = intermediate;
  c.layers = 2;
  c.heads = 4;
  c.kv_heads = 2;
  c.max_positions = 16;
  return c;
}

class TinyLlamaCase : public TinyDecoderCase {
  std::shared_ptr<torch::nn::Module> build(const CaseContext& ctx) override {
    llama = models::LlamaForCausalLM(tiny_llama(64));
    // With the kernels' switch (ATen's operators on the CPU), q/k/v and gate/up run as joined products.
    llama->fused_kernels = ctx.config.get_bool("fused_kernels", false);
    return llama.ptr();
  }
  torch::Tensor loss(const torch::Tensor& ids) override {
    const auto logits = llama->forward(ids.narrow(1, 0, ids.size(1) - 1));
    return torch::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}),
                                     ids.narrow(1, 1, ids.size(1) - 1).reshape({-1}));
  }
  models::LlamaForCausalLM llama{nullptr};
};

// The tiny Llama with a mixture of experts in both layers (4 experts, 2 a token; the capacity from
// the config's moe_capacity_factor), its loss with the routers' auxiliary losses.
class TinyMoeLlamaCase : public TinyDecoderCase {
  std::shared_ptr<torch::nn::Module> build(const CaseContext& ctx) override {
    models::LlamaConfig c = tiny_llama(48);
    c.moe.experts = 4;
    c.moe.top_k = 2;
    c.moe.capacity_factor = ctx.config.get_number("moe_capacity_factor", 0.0);
    llama = models::LlamaForCausalLM(c);
    return llama.ptr();
  }
  torch::Tensor loss(const torch::Tensor& ids) override { return llama->loss(ids); }
  models::LlamaForCausalLM llama{nullptr};
};

const std::string kGptConfig =
    "target_metric: loss\ntarget_mode: min\ntarget_value: 0\nmax_epochs: 0\nmax_steps: 6\nlog_freq: 0\n"
    "eval_interval_epochs: 0\noptimizer: adamw\nlr: 0.01\nweight_decay: 0.1\nweight_decay_skip_1d: true\n"
    "record_loss_curve: true\nbucket_size_mb: 0.01\ntrain_batch_size: 8\neval_batch_size: 16\n";

// Every step's loss (rank 0's FINISHED) and the FINISHED event, of the tiny GPT on `world` ranks.
struct GptRun {
  std::vector<double> curve;
  nlohmann::json finished;
};

template <typename Case = TinyGptCase>
GptRun run_gpt(const std::string& overrides, int world = 1) {
  std::vector<std::string> outs(static_cast<std::size_t>(world));
  on_ranks(world, [&](int rank, int port) {
    Case c;
    RunInfo info;
    info.case_name = "tinygpt:libtorch";
    info.vendor = "cpu";
    info.env = env_for(rank, world, port);
    std::ostringstream out;
    run_training(c, test::toy_config_for(kGptConfig + overrides), info, out);
    outs[static_cast<std::size_t>(rank)] = out.str();
  });
  std::istringstream in(outs[0]);
  GptRun run;
  for (const auto& e : parse_perflog(in).events)
    if (e.event == perflog_event::kFinished) run.finished = e.value;
  for (const auto& v : run.finished.at("loss_curve")) run.curve.push_back(v.get<double>());
  return run;
}

void expect_same_curve(const std::vector<double>& got, const std::vector<double>& want, double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tolerance * std::abs(want[i])) << "step " << i + 1;
}

TEST(Zero, EveryStageGivesTheDataParallelLossCurve) {
  SKIP_WITHOUT_GLOO();
  const auto plain = run_gpt("", 2);
  ASSERT_EQ(plain.curve.size(), 6u);
  EXPECT_LT(plain.curve.back(), plain.curve.front() - 0.1) << "the tiny GPT learns";
  for (const std::string stage : {"1", "2", "3"}) {
    const auto sharded = run_gpt("zero_stage: " + stage + "\n", 2);
    SCOPED_TRACE("zero_stage " + stage);
    expect_same_curve(sharded.curve, plain.curve, 1e-5);
    // Each rank keeps the optimizer state of half the parameters (and a unit's padding).
    const double all = 2 * sharded.finished.at("zero_owned_parameters").get<double>();
    EXPECT_LT(all, 70000.0);
  }
  // The multi-tensor step on the shares, and three ranks (shares that do not divide the units).
  expect_same_curve(run_gpt("zero_stage: 2\nfused_optimizer: foreach\n", 2).curve, plain.curve, 1e-5);
  const auto three = run_gpt("train_batch_size: 4\n", 3);
  expect_same_curve(run_gpt("train_batch_size: 4\nzero_stage: 1\n", 3).curve, three.curve, 1e-5);
  expect_same_curve(run_gpt("train_batch_size: 4\nzero_stage: 3\n", 3).curve, three.curve, 1e-5);
}

TEST(Zero, StageThreeKeepsOnlySharesOfTheBlocksBetweenUses) {
  SKIP_WITHOUT_GLOO();
  on_two_ranks([&](int rank, int port) {
    auto dist = Distributed::create(env_for(rank, 2, port), torch::kCPU, {});
    auto gpt = models::GptLMHeadModel(tiny_gpt(0.0));
    auto params = gpt->parameters();
    dist->broadcast_parameters(params);
    std::vector<torch::Tensor> before;
    std::int64_t total = 0;
    for (const auto& p : params) {
      before.push_back(p.detach().clone());
      total += p.numel();
    }
    const auto blocks = gpt->transformer->blocks();
    ZeroSharding zero(*dist, params, std::vector<bool>(params.size(), true), 3, 1 << 14, blocks);
    for (auto* block : blocks)
      for (const auto& p : block->parameters()) EXPECT_EQ(p.numel(), 0) << "a block keeps its share only";
    EXPECT_EQ(gpt->transformer->wte->weight.numel(), 64 * 32) << "the embedding stays whole";
    EXPECT_LE(zero.owned_elements(), total / 2 + 2 * static_cast<std::int64_t>(zero.unit_count()));
    zero.gather_all();
    for (std::size_t i = 0; i < params.size(); ++i)
      EXPECT_TRUE(torch::equal(params[i].detach(), before[i])) << "parameter " << i << " gathered back";
    dist->barrier();
  });
}

TEST(TensorParallel, SplitHeadsAndUnitsGiveTheUnsplitLossCurve) {
  SKIP_WITHOUT_GLOO();
  // One group of two ranks against one rank with the same batch; clipping needs the norm of
  // gradients spread over the group.
  const std::string clip = "clip_grad_norm: 0.5\nlog_freq: 1\n";
  const auto split = run_gpt(clip + "tensor_parallel: 2\n", 2);
  EXPECT_EQ(split.finished.at("tensor_parallel"), 2);
  EXPECT_EQ(split.finished.at("num_trained_samples"), 6 * 8) << "the group's two ranks share each sample";
  expect_same_curve(split.curve, run_gpt(clip).curve, 1e-5);
  // Two groups of two (data parallelism over them) against two data-parallel ranks, with accumulation.
  const std::string accumulate = "train_batch_size: 4\nglobal_batch_size: 16\n";
  expect_same_curve(run_gpt(accumulate + "tensor_parallel: 2\n", 4).curve, run_gpt(accumulate, 2).curve, 1e-5);
}

TEST(TensorParallel, LlamaSplitsHeadsUnitsAndVocabularyWithTheUnsplitLossCurve) {
  SKIP_WITHOUT_GLOO();
  // Query and key/value heads, the SwiGLU units and the embedding's vocabulary rows over two ranks.
  const std::string clip = "clip_grad_norm: 0.5\nlog_freq: 1\n";
  const auto whole = run_gpt<TinyLlamaCase>(clip);
  ASSERT_EQ(whole.curve.size(), 6u);
  EXPECT_LT(whole.curve.back(), whole.curve.front() - 0.1) << "the tiny Llama learns";
  expect_same_curve(run_gpt<TinyLlamaCase>(clip + "tensor_parallel: 2\n", 2).curve, whole.curve, 1e-5);
  // q, k and v as one product and gate and up from one input, each entering the group once (one
  // all-reduce of the input's gradient where each layer took its own): the same curve, split or not.
  const std::string joined = clip + "fused_kernels: true\n";
  expect_same_curve(run_gpt<TinyLlamaCase>(joined).curve, whole.curve, 1e-5);
  expect_same_curve(run_gpt<TinyLlamaCase>(joined + "tensor_parallel: 2\n", 2).curve, whole.curve, 1e-5);
}

TEST(TensorParallel, LlamaWithSequenceParallelismGivesTheUnsplitLossCurve) {
  SKIP_WITHOUT_GLOO();
  // Megatron's sequence parallelism: the embedding's sum scattered over the ranks' tokens, the norms
  // and the residual stream on a rank's half, all-gathers into the split products, reduce-scatters
  // out of them, and the last hidden state gathered for the whole output layer.
  const std::string clip = "clip_grad_norm: 0.5\nlog_freq: 1\n";
  const auto whole = run_gpt<TinyLlamaCase>(clip);
  const auto sequence = run_gpt<TinyLlamaCase>(clip + "tensor_parallel: 2\nsequence_parallel: true\n", 2);
  expect_same_curve(sequence.curve, whole.curve, 1e-5);
  // With the joined products, and two groups of two (data parallelism over them) with accumulation.
  expect_same_curve(
      run_gpt<TinyLlamaCase>(clip + "fused_kernels: true\ntensor_parallel: 2\nsequence_parallel: true\n", 2).curve,
      whole.curve, 1e-5);
  const std::string accumulate = "train_batch_size: 4\nglobal_batch_size: 16\n";
  expect_same_curve(run_gpt<TinyLlamaCase>(accumulate + "tensor_parallel: 2\nsequence_parallel: true\n", 4).curve,
                    run_gpt<TinyLlamaCase>(accumulate, 2).curve, 1e-5);
}

TEST(TensorParallel, GptWithSequenceParallelismGivesTheUnsplitLossCurve) {
  SKIP_WITHOUT_GLOO();
  // GPT's embeddings are whole on every rank: their output is cut to a rank's tokens (the gradient
  // gathered back), the LayerNorms' weights and biases get their gradients summed over the group,
  // and ln_f's output is gathered for the tied output layer.
  const std::string clip = "clip_grad_norm: 0.5\nlog_freq: 1\n";
  const auto whole = run_gpt(clip);
  const auto sequence = run_gpt(clip + "tensor_parallel: 2\nsequence_parallel: true\n", 2);
  expect_same_curve(sequence.curve, whole.curve, 1e-5);
  // The residual adds joined to the norms after them (the kernels' path); the same as without
  // sequence parallelism; two groups of two (data parallelism over them) with accumulation.
  expect_same_curve(run_gpt(clip + "fused_kernels: true\n").curve, whole.curve, 1e-5);
  expect_same_curve(run_gpt(clip + "fused_kernels: true\ntensor_parallel: 2\nsequence_parallel: true\n", 2).curve,
                    whole.curve, 1e-5);
  expect_same_curve(sequence.curve, run_gpt(clip + "tensor_parallel: 2\n", 2).curve, 1e-5);
  const std::string accumulate = "train_batch_size: 4\nglobal_batch_size: 16\n";
  expect_same_curve(run_gpt(accumulate + "tensor_parallel: 2\nsequence_parallel: true\n", 4).curve,
                    run_gpt(accumulate, 2).curve, 1e-5);
}

TEST(TensorParallel, Bf16OnCpuRanksGivesTheUnsplitCurve) {
  SKIP_WITHOUT_GLOO();
  // Under bf16 autocast the split products' inputs and gradients are bf16, which LibTorch 1.13's
  // Gloo cannot carry ("Invalid scalar type"): they go through it as fp32, exactly. A split product
  // rounds its partial sums to bf16 before they are added, so six steps part from the whole model's
  // by up to 8e-4 of the loss (bf16's rounding, grown by the updates). Sequence parallelism rounds no
  // product otherwise; only its norms' gradients are summed in another order, which bf16 grows to
  // 5e-5 of the loss by step 6.
  const std::string bf16 = "precision: bf16\nclip_grad_norm: 0.5\nlog_freq: 1\n";
  const auto whole = run_gpt(bf16);
  const auto split = run_gpt(bf16 + "tensor_parallel: 2\n", 2);
  expect_same_curve(split.curve, whole.curve, 2e-3);
  expect_same_curve(run_gpt(bf16 + "tensor_parallel: 2\nsequence_parallel: true\n", 2).curve, split.curve, 2e-4);
}

TEST(TensorParallel, SequenceParallelismOnAModelThatCannotSplitItsSequenceNamesTheKey) {
  SKIP_WITHOUT_GLOO();
  try {
    run_gpt<TinyGptKeepingWholeSequencesCase>("tensor_parallel: 2\nsequence_parallel: true\n", 2);
    FAIL() << "this GPT does not split its sequence";
  } catch (const std::exception& e) {
    EXPECT_NE(
        std::string(e.what()).find("sequence_parallel: the model of tinygpt:libtorch does not split its sequence"),
        std::string::npos)
        << e.what();
  }
}

TEST(ExpertParallel, ExpertsSplitOverRanksGiveTheDataParallelLossCurve) {
  SKIP_WITHOUT_GLOO();
  // Two ranks, each with 2 of the 4 experts, against two data-parallel ranks with all 4; clipping
  // needs the norm of gradients spread over the group, evaluation runs the exchanges too.
  const std::string clip = "clip_grad_norm: 0.5\nlog_freq: 1\nnum_local_experts: 4\n";
  const auto whole = run_gpt<TinyMoeLlamaCase>(clip, 2);
  ASSERT_EQ(whole.curve.size(), 6u);
  EXPECT_LT(whole.curve.back(), whole.curve.front() - 0.1) << "the tiny mixture of experts learns";
  const auto split = run_gpt<TinyMoeLlamaCase>(clip + "expert_parallel: 2\n", 2);
  EXPECT_EQ(split.finished.at("expert_parallel"), 2);
  // Half of 2 layers × 4 experts × 3 matrices of 48 × 32 a rank.
  EXPECT_EQ(split.finished.at("expert_parameters_on_this_rank"), 2 * 2 * 3 * 48 * 32);
  EXPECT_FALSE(whole.finished.contains("expert_parameters_on_this_rank"));
  expect_same_curve(split.curve, whole.curve, 1e-5);
  // A capacity that drops tokens drops the same ones.
  expect_same_curve(run_gpt<TinyMoeLlamaCase>(clip + "moe_capacity_factor: 0.5\nexpert_parallel: 2\n", 2).curve,
                    run_gpt<TinyMoeLlamaCase>(clip + "moe_capacity_factor: 0.5\n", 2).curve, 1e-5);
  // Two groups of two (the experts' gradients also averaged over the groups), with accumulation.
  const std::string accumulate = "train_batch_size: 2\nglobal_batch_size: 16\nnum_local_experts: 4\n";
  expect_same_curve(run_gpt<TinyMoeLlamaCase>(accumulate + "expert_parallel: 2\n", 4).curve,
                    run_gpt<TinyMoeLlamaCase>(accumulate, 4).curve, 1e-5);
}

TEST(TensorParallel, ASplitTheModelCannotMakeNamesItsSize) {
  SKIP_WITHOUT_GLOO();
  // Four ranks over the tiny Llama's two key/value heads.
  try {
    run_gpt<TinyLlamaCase>("tensor_parallel: 4\n", 4);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("does not divide Llama's 2 key/value heads (num_key_value_heads)"),
              std::string::npos)
        << e.what();
  }
}

double final_loss(const GptRun& run) {
  return run.finished.at("final_metric").at("value").get<double>();
}

TEST(PipelineParallel, StagesGiveTheUnsplitLossCurveAndEvaluation) {
  SKIP_WITHOUT_GLOO();
  // Two stages of one block each, four micro-batches a step in 1F1B order, against one rank with the
  // whole batch; clipping needs the norm over the stages (the tied embedding counted once).
  const std::string clip = "clip_grad_norm: 0.5\nlog_freq: 1\n";
  const auto whole = run_gpt(clip + "train_batch_size: 16\n");
  const auto staged = run_gpt(clip + "train_batch_size: 4\nglobal_batch_size: 16\npipeline_parallel: 2\n", 2);
  EXPECT_EQ(staged.finished.at("pipeline_parallel"), 2);
  EXPECT_EQ(staged.finished.at("accumulation_steps"), 4);
  EXPECT_EQ(staged.finished.at("num_trained_samples"), 6 * 16) << "the stages share each sample";
  expect_same_curve(staged.curve, whole.curve, 1e-5);
  EXPECT_NEAR(final_loss(staged), final_loss(whole), 1e-5 * final_loss(whole)) << "the last stage's evaluation";
  // One micro-batch a step (no overlap), and with checkpointing.
  expect_same_curve(
      run_gpt(clip + "train_batch_size: 16\npipeline_parallel: 2\nactivation_checkpointing: true\n", 2).curve,
      whole.curve, 1e-5);
}

TEST(PipelineParallel, ComposesWithDataAndTensorParallelism) {
  SKIP_WITHOUT_GLOO();
  const std::string accumulate = "train_batch_size: 4\nglobal_batch_size: 16\n";
  // Two pipelines of two stages (data parallelism over them) against two data-parallel ranks.
  const auto two = run_gpt(accumulate, 2);
  expect_same_curve(run_gpt(accumulate + "pipeline_parallel: 2\n", 4).curve, two.curve, 1e-5);
  // Two stages of two tensor-parallel ranks each against one rank.
  const auto staged_split = run_gpt(accumulate + "pipeline_parallel: 2\ntensor_parallel: 2\nclip_grad_norm: 0.5\n", 4);
  const auto one = run_gpt("train_batch_size: 16\nclip_grad_norm: 0.5\n");
  expect_same_curve(staged_split.curve, one.curve, 1e-5);
  EXPECT_NEAR(final_loss(staged_split), final_loss(one), 1e-5 * final_loss(one));
  // With sequence parallelism: the stages pass a rank's share of the tokens to the same place in
  // the next stage's group (and its gradient back).
  const auto staged_sequence = run_gpt(
      accumulate + "pipeline_parallel: 2\ntensor_parallel: 2\nsequence_parallel: true\nclip_grad_norm: 0.5\n", 4);
  expect_same_curve(staged_sequence.curve, one.curve, 1e-5);
  EXPECT_NEAR(final_loss(staged_sequence), final_loss(one), 1e-5 * final_loss(one));
}

TEST(ModelParallel, RanksAreLaidOutInMegatronsOrder) {
  // 8 ranks, tensor parallel 2, 2 stages, so 2 data-parallel ranks: a tensor-parallel group is two
  // consecutive ranks; the stages of a pipeline are 4 apart.
  EXPECT_EQ(rank_place(0, 2, 2).stage, 0);
  const RankPlace five = rank_place(5, 2, 2);
  EXPECT_EQ(five.stage, 1);
  EXPECT_EQ(five.data_index, 0);
  EXPECT_EQ(five.place, 1);
  for (int rank = 0; rank < 8; ++rank) EXPECT_EQ(rank_at(rank_place(rank, 2, 2), 2, 2), rank);
  EXPECT_EQ(rank_at({1, 1, 0}, 2, 2), 6);
}

TEST(PipelineParallel, StagesThatDoNotDivideTheBlocksAreRefused) {
  SKIP_WITHOUT_GLOO();
  try {
    run_gpt("pipeline_parallel: 3\n", 3);
    FAIL() << "three stages of a two-block model";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("pipeline_parallel 3 does not divide the model's 2 blocks"), std::string::npos)
        << e.what();
  }
}

TEST(Accumulation, MicroBatchesGiveTheLossOfOneBatchAsLarge) {
  const auto whole = run_gpt("train_batch_size: 16\n");
  expect_same_curve(run_gpt("train_batch_size: 4\nglobal_batch_size: 16\n").curve, whole.curve, 1e-5);
}

TEST(Accumulation, ComposesWithDataParallelismAndZero) {
  SKIP_WITHOUT_GLOO();
  const auto whole = run_gpt("train_batch_size: 8\n", 2);
  // Data parallelism's hooks send the accumulated sums with the last micro-batch.
  expect_same_curve(run_gpt("train_batch_size: 4\nglobal_batch_size: 16\n", 2).curve, whole.curve, 1e-5);
  expect_same_curve(run_gpt("train_batch_size: 4\nglobal_batch_size: 16\noverlap_grad_reduce: false\n", 2).curve,
                    whole.curve, 1e-5);
  expect_same_curve(run_gpt("train_batch_size: 4\nglobal_batch_size: 16\nzero_stage: 1\n", 2).curve, whole.curve, 1e-5);
  expect_same_curve(run_gpt("train_batch_size: 4\nglobal_batch_size: 16\nzero_stage: 2\n", 2).curve, whole.curve, 1e-5);
  // ZeRO-3 gathers each block again in backward, also when checkpointing recomputes it there.
  expect_same_curve(run_gpt("train_batch_size: 4\nglobal_batch_size: 16\nzero_stage: 3\n", 2).curve, whole.curve, 1e-5);
  expect_same_curve(
      run_gpt("train_batch_size: 4\nglobal_batch_size: 16\nzero_stage: 3\nactivation_checkpointing: true\n", 2).curve,
      whole.curve, 1e-5);
}

// ZeRO-Offload on two data-parallel ranks: each bucket's sum goes to the host as its overlapped
// all-reduce starts, and the host's update divides it by the ranks. With gradient accumulation and
// clipping, the loss curve is the one of the gradients copied after the reduction, to the bit (two
// ranks halve exactly), and the one of AdamW on the ranks within 1e-5; FINISHED says what streamed.
TEST(Accumulation, OffloadStreamsTheReducedBucketsOfTwoRanks) {
  SKIP_WITHOUT_GLOO();
  const std::string o = "train_batch_size: 4\nglobal_batch_size: 16\nclip_grad_norm: 0.2\n";
  const auto on_ranks = run_gpt(o, 2);
  const auto streamed = run_gpt(o + "offload_optimizer: true\n", 2);
  const auto after = run_gpt(o + "offload_optimizer: true\noffload_stream_gradients: false\n", 2);
  expect_same_curve(streamed.curve, on_ranks.curve, 1e-5);
  EXPECT_EQ(streamed.curve, after.curve);
  EXPECT_EQ(streamed.finished.value("offload_streamed_gradient_share", -1.0), 1.0);
  EXPECT_EQ(after.finished.value("offload_streamed_gradient_share", -1.0), 0.0);
  // Without the overlapped reduction the sums come after the backward: nothing streams.
  const auto reduced_after = run_gpt(o + "offload_optimizer: true\noverlap_grad_reduce: false\n", 2);
  EXPECT_EQ(reduced_after.curve, after.curve);
  EXPECT_EQ(reduced_after.finished.value("offload_streamed_gradient_share", -1.0), 0.0);
}

// Gradients of every parameter after one backward, from the same seed.
std::vector<torch::Tensor> gradients(torch::nn::Module& model, const std::function<torch::Tensor()>& loss) {
  model.zero_grad();
  torch::manual_seed(5);
  loss().backward();
  std::vector<torch::Tensor> grads;
  for (const auto& p : model.parameters())
    grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  return grads;
}

void expect_same_gradients(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(torch::allclose(got[i], want[i], 1e-5, 1e-7)) << "parameter " << i;
}

TEST(ActivationCheckpointing, GivesTheSameGradientsWithDropout) {
  auto gpt = models::GptLMHeadModel(tiny_gpt(0.2));
  const auto ids = rule_tokens().narrow(0, 0, 4);
  const auto gpt_loss = [&] { return gpt->loss(ids); };
  const auto kept = gradients(*gpt, gpt_loss);
  EXPECT_EQ(set_activation_checkpointing(*gpt, true), 1);
  expect_same_gradients(gradients(*gpt, gpt_loss), kept);

  models::BertConfig bc;
  bc.vocab = 64, bc.positions = 32, bc.layers = 2, bc.hidden = 32, bc.heads = 2, bc.intermediate = 64;
  bc.dropout = 0.2;
  auto bert = models::BertForMaskedLM(bc);
  const auto types = torch::zeros_like(ids);
  const auto labels = torch::where(torch::arange(ids.size(1)).remainder(3).eq(0), ids, torch::full_like(ids, -100));
  const auto bert_loss = [&] { return bert->loss_and_accuracy(ids, types, {}, labels).first; };
  const auto bert_kept = gradients(*bert, bert_loss);
  EXPECT_EQ(set_activation_checkpointing(*bert, true), 1);
  expect_same_gradients(gradients(*bert, bert_loss), bert_kept);

  // Through the runtime: the same loss curve, with dropout drawing the same masks.
  expect_same_curve(run_gpt("dropout: 0.1\nactivation_checkpointing: true\n").curve, run_gpt("dropout: 0.1\n").curve,
                    1e-5);
}

TEST(ActivationCheckpointing, AModelWithoutBlocksIsRefused) {
  test::ToyCase toy;
  RunInfo info;
  info.case_name = "toy:libtorch";
  std::ostringstream out;
  try {
    run_training(toy, test::toy_config_for("activation_checkpointing: true\n"), info, out);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("the model of toy:libtorch has no blocks to checkpoint"), std::string::npos)
        << e.what();
  }
}

// What the gpt2 case declares.
const ModelSplits kGptSplits{true, {{"n_head", "attention heads"}}, true, {{"n_layer", "blocks"}}, std::nullopt};

std::vector<std::string> switch_errors(const std::string& yaml, int world_size,
                                       const ModelSplits* splits = &kGptSplits) {
  Diagnostics diags;
  auto cfg = load_config_text(yaml, "config_H200x1x2.yaml", diags);
  check_training_switches(*cfg, world_size, diags, splits);
  std::vector<std::string> errors;
  for (const auto& d : diags.items()) errors.push_back(d.where.str() + ": " + d.message);
  return errors;
}

TEST(SwitchCheck, RefusesCombinationsThatCannotWorkNamingTheLine) {
  EXPECT_TRUE(switch_errors("precision: bf16\nzero_stage: 2\ntrain_batch_size: 4\nglobal_batch_size: 16\n", 2).empty());
  auto e = switch_errors("train_batch_size: 4\nglobal_batch_size: 12\n", 2);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("config_H200x1x2.yaml:2: 'global_batch_size' 12 is not a multiple of train_batch_size × "
                      "data-parallel ranks = "
                      "4 × 2"),
            std::string::npos)
      << e[0];
  EXPECT_TRUE(switch_errors("zero_stage: 3\n", 2).empty());
  e = switch_errors("zero_stage: 4\n", 2);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("'zero_stage' must be 0, 1, 2 or 3"), std::string::npos);
  e = switch_errors("precision: fp8\n", 1);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("'precision' must be fp32, tf32, bf16 or fp16, got 'fp8'"), std::string::npos);
  e = switch_errors("cuda_graphs: true\nzero_stage: 1\n", 1);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find(":1: cuda_graphs: not with zero_stage"), std::string::npos) << e[0];
  EXPECT_EQ(switch_errors("cuda_graphs: true\nactivation_checkpointing: true\n", 1).size(), 1u);
  EXPECT_EQ(switch_errors("cuda_graphs: true\ntrain_batch_size: 2\nglobal_batch_size: 4\n", 1).size(), 1u);
  EXPECT_EQ(switch_errors("cuda_graphs: true\n", 2).size(), 1u);
  EXPECT_TRUE(switch_errors("cuda_graphs: true\nprecision: bf16\n", 1).empty());
  EXPECT_TRUE(switch_errors("cuda_graphs: true\nprecision: fp16\n", 1).empty());  // the scale is a device tensor
  EXPECT_TRUE(switch_errors("tensor_parallel: 2\ntrain_batch_size: 4\nglobal_batch_size: 8\n", 4).empty());
  e = switch_errors("tensor_parallel: 3\n", 4);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("'tensor_parallel' 3 does not divide the 4 ranks"), std::string::npos) << e[0];
  EXPECT_EQ(switch_errors("tensor_parallel: 2\nzero_stage: 1\n", 4).size(), 1u);
  e = switch_errors("sequence_parallel: true\n", 2);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find(":1: sequence_parallel needs tensor_parallel 2 or more"), std::string::npos) << e[0];
  EXPECT_TRUE(switch_errors("tensor_parallel: 2\npipeline_parallel: 2\nsequence_parallel: true\n", 4).empty());
  e = switch_errors("n_head: 12\ntensor_parallel: 8\n", 8);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find(":2: 'tensor_parallel' 8 does not divide the model's 12 attention heads"), std::string::npos)
      << e[0];
  EXPECT_TRUE(switch_errors("n_layer: 4\npipeline_parallel: 2\ntensor_parallel: 2\n", 8).empty());
  e = switch_errors("n_layer: 4\npipeline_parallel: 3\n", 6);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find(":2: 'pipeline_parallel' 3 does not divide the model's 4 blocks (n_layer)"), std::string::npos)
      << e[0];
  e = switch_errors("pipeline_parallel: 2\ntensor_parallel: 2\n", 6);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("'pipeline_parallel' 2 × tensor_parallel 2 does not divide the 6 ranks"), std::string::npos)
      << e[0];
  EXPECT_EQ(switch_errors("pipeline_parallel: 2\nzero_stage: 1\n", 2).size(), 1u);
  EXPECT_EQ(switch_errors("pipeline_parallel: 2\nsave_checkpoint: /tmp/x.pt\n", 2).size(), 1u);
  // The global batch divides over the pipelines, not the ranks.
  EXPECT_TRUE(switch_errors("pipeline_parallel: 2\ntrain_batch_size: 4\nglobal_batch_size: 8\n", 4).empty());
  EXPECT_EQ(switch_errors("pipeline_parallel: 2\ntrain_batch_size: 4\nglobal_batch_size: 12\n", 4).size(), 1u);
}

TEST(SwitchCheck, TheCasesModelSaysWhatItCanSplit) {
  // A model without tensor-parallel layers or blocks (LeNet-5's declaration).
  const ModelSplits none;
  auto e = switch_errors("tensor_parallel: 2\n", 2, &none);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find(":1: 'tensor_parallel' 2: the model of this case has no layers to split"), std::string::npos)
      << e[0];
  e = switch_errors("pipeline_parallel: 2\n", 2, &none);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("has no blocks to split into stages"), std::string::npos) << e[0];
  // Every size the model declares is held to the split, each named by its own key.
  const ModelSplits bert{true,
                         {{"num_attention_heads", "attention heads"}, {"intermediate_size", "intermediate units"}},
                         false,
                         {},
                         std::nullopt};
  e = switch_errors("num_attention_heads: 4\nintermediate_size: 6\ntensor_parallel: 4\n", 4, &bert);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find(":3: 'tensor_parallel' 4 does not divide the model's 6 intermediate units (intermediate_size)"),
            std::string::npos)
      << e[0];
  // A case that declared nothing is left to its ranks.
  EXPECT_TRUE(switch_errors("tensor_parallel: 2\nn_head: 3\n", 2, nullptr).empty());
}

TEST(ExpertParallel, AModelWithoutExpertsOrWithExpertsThatDoNotDivideIsRefused) {
  SKIP_WITHOUT_GLOO();
  // Refused by the config's check, and by the model where the config says it has experts.
  for (const auto& [config, says] :
       {std::pair<std::string, std::string>{"expert_parallel: 2\n", "'expert_parallel' 2 with no experts"},
        {"expert_parallel: 2\nnum_local_experts: 4\n", "this Llama has no experts"}}) {
    try {
      run_gpt<TinyLlamaCase>(config, 2);
      ADD_FAILURE() << "expected a ConfigError for " << config;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
  auto e = switch_errors("expert_parallel: 3\nnum_local_experts: 8\n", 4);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_NE(e[0].find("'expert_parallel' 3 does not divide the 4 ranks"), std::string::npos) << e[0];
  EXPECT_NE(e[1].find("does not divide the model's 8 experts"), std::string::npos) << e[1];
  e = switch_errors("expert_parallel: 2\n", 2);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("with no experts"), std::string::npos) << e[0];
  e = switch_errors("expert_parallel: 2\nnum_local_experts: 4\nzero_stage: 1\n", 4);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("zero_stage: not yet with expert_parallel"), std::string::npos) << e[0];
  EXPECT_TRUE(switch_errors("expert_parallel: 2\nnum_local_experts: 4\n", 4).empty());
}

}  // namespace
}  // namespace xpuperf::train
