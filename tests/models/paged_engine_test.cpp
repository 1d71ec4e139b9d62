// The paged serving engine (infer/paged_engine.h): 32 prompts of mixed lengths run together, with
// chunked prefill and preemption, give each sequence the greedy tokens it gives alone.

#include "xpuperf/infer/paged_engine.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "xpuperf/models/fused_ops.h"
#include "xpuperf/models/gpt.h"
#include "xpuperf/models/llama.h"
#include "xpuperf/ops/composite.h"
#include "xpuperf/ops/operators.h"
#include "xpuperf/torchrt/kernel_profile.h"

namespace xpuperf::infer {
namespace {

struct Request {
  std::vector<std::int64_t> prompt;
  std::int64_t output = 0;
};

std::vector<Request> mixed_requests(std::int64_t count, std::int64_t vocab) {
  torch::manual_seed(11);
  std::vector<Request> out;
  for (std::int64_t i = 0; i < count; ++i) {
    const auto length = torch::randint(2, 40, {1}).item<std::int64_t>();
    const auto ids = torch::randint(0, vocab, {length});
    Request r;
    r.prompt.assign(ids.data_ptr<std::int64_t>(), ids.data_ptr<std::int64_t>() + length);
    r.output = torch::randint(1, 12, {1}).item<std::int64_t>();
    out.push_back(r);
  }
  return out;
}

// Greedy alone: the full forward pass over the growing sequence, no cache.
std::vector<std::int64_t> greedy_alone(models::CausalDecoder& decoder, const Request& r,
                                       torch::Device device = torch::kCPU) {
  torch::NoGradGuard no_grad;
  auto seq = torch::tensor(r.prompt, torch::kLong).view({1, -1}).to(device);
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < r.output; ++i) {
    const auto next = decoder.decoder_logits(seq, nullptr, 1).select(1, -1).argmax(-1, true);
    out.push_back(next.item<std::int64_t>());
    seq = torch::cat({seq, next}, 1);
  }
  return out;
}

// Float64, so that the order of a batched sum cannot turn a near tie.
// With `buckets`, decode-only steps go through the padded buckets (as device graphs where the
// device has them), and some must.
void expect_paged_engine_matches_alone(models::CausalDecoder& decoder, std::int64_t vocab,
                                       torch::Device device = torch::kCPU, torch::Dtype dtype = torch::kDouble,
                                       DecodeBuckets buckets = {}) {
  const auto requests = mixed_requests(32, vocab);
  serving::SchedulerOptions o;
  o.block_size = 4;
  o.blocks = 30;                  // 120 tokens of cache for 32 sequences of up to 50: preemptions
  o.max_num_batched_tokens = 24;  // most prompts come in chunks
  o.max_num_seqs = 12;
  buckets.max_length = 52;  // the longest prompt and output
  PagedEngine engine(decoder, device, dtype, o, buckets);
  for (std::size_t i = 0; i < requests.size(); ++i)
    engine.add(static_cast<std::int64_t>(i), requests[i].prompt, requests[i].output);
  std::int64_t steps = 0, mixed = 0, most_sequences = 0, bucketed = 0, replayed = 0;
  while (!engine.finished()) {
    const auto r = engine.step();
    bucketed += r.bucketed, replayed += r.replayed;
    ASSERT_GT(r.tokens, 0) << "a step with work left runs something";
    ASSERT_LE(r.tokens, o.max_num_batched_tokens);
    if (r.sequences > r.sampled && r.sampled > 0) ++mixed;  // decodes beside a prompt's chunk
    most_sequences = std::max(most_sequences, r.sequences);
    ASSERT_LT(++steps, 2000);
  }
  EXPECT_GT(engine.scheduler().preemptions(), 0) << "the pool is small enough to preempt";
  EXPECT_GT(mixed, 0) << "steps mix decoding with prefill chunks";
  EXPECT_GT(most_sequences, 4);
  EXPECT_EQ(engine.scheduler().free_blocks(), o.blocks);
  if (buckets.enabled) {
    EXPECT_GT(bucketed, 0) << "decode-only steps went through the buckets";
    const bool graphs = buckets.graphs && device.is_cuda();
    EXPECT_EQ(replayed > 0, graphs) << engine.describe();
    EXPECT_EQ(engine.graphs() > 0, graphs);
  } else {
    EXPECT_EQ(bucketed, 0);
  }
  for (std::size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(engine.output(static_cast<std::int64_t>(i)), greedy_alone(decoder, requests[i], device))
        << "sequence " << i;
}

constexpr std::int64_t kVocab = 97;

// The tests' Llama: tiny in float64 on the CPU; on CUDA with heads of 64 (as the kernels take) and
// the fused kernels, in float32.
models::LlamaForCausalLM test_llama(std::uint64_t seed, torch::Device device = torch::kCPU) {
  models::LlamaConfig c;
  c.vocab = kVocab, c.layers = 2, c.heads = 4, c.kv_heads = 2;
  c.hidden = device.is_cuda() ? 256 : 32, c.intermediate = device.is_cuda() ? 384 : 48;
  torch::manual_seed(seed);
  auto m = models::LlamaForCausalLM(c);
  if (device.is_cuda()) {
    m->to(device);
    m->use_fused_kernels(true);
  } else {
    m->to(torch::kDouble);
  }
  m->eval();
  return m;
}

TEST(PagedEngine, LlamaBatchedWithChunksAndPreemptionGivesEachSequencesGreedyTokens) {
  auto m = test_llama(5);
  expect_paged_engine_matches_alone(*m, kVocab);
}

// The same through the decode buckets (eager here): padded rows write only the scratch block.
TEST(PagedEngine, LlamaThroughDecodeBucketsGivesEachSequencesGreedyTokens) {
  auto m = test_llama(5);
  DecodeBuckets buckets;
  buckets.enabled = true;
  expect_paged_engine_matches_alone(*m, kVocab, torch::kCPU, torch::kDouble, buckets);
}

// Prompts of one length, several whole in a step: their attention runs as one batch, and each
// sequence still gets its own greedy tokens.
TEST(PagedEngine, WholePromptsOfOneLengthRunTogetherAndEachGetsItsTokens) {
  auto m = test_llama(7);
  std::vector<Request> requests;
  for (std::int64_t i = 0; i < 8; ++i) {
    const auto ids = torch::randint(0, kVocab, {9});
    requests.push_back(
        {std::vector<std::int64_t>(ids.data_ptr<std::int64_t>(), ids.data_ptr<std::int64_t>() + 9), 4 + i % 3});
  }
  serving::SchedulerOptions o;
  o.block_size = 4, o.blocks = 40, o.max_num_batched_tokens = 40, o.max_num_seqs = 8;  // four prompts a step
  PagedEngine engine(*m, torch::kCPU, torch::kDouble, o);
  for (std::size_t i = 0; i < requests.size(); ++i)
    engine.add(static_cast<std::int64_t>(i), requests[i].prompt, requests[i].output);
  const auto first = engine.step();
  EXPECT_EQ(first.tokens, 40) << "four whole prompts of 9 and the fifth's first chunk of 4";
  EXPECT_EQ(first.first_token.size(), 4u) << "the four whole ones sample";
  while (!engine.finished()) engine.step();
  for (std::size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(engine.output(static_cast<std::int64_t>(i)), greedy_alone(*m, requests[i])) << "sequence " << i;
}

TEST(PagedEngine, DecodeBucketsCoverEveryRowCountAndLength) {
  EXPECT_EQ(decode_row_buckets(1), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(decode_row_buckets(12), (std::vector<std::int64_t>{1, 2, 4, 8, 12}));
  EXPECT_EQ(decode_row_buckets(32), (std::vector<std::int64_t>{1, 2, 4, 8, 16, 32}));
  EXPECT_EQ(decode_row_buckets(100), (std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 64, 96, 100}));
  EXPECT_EQ(decode_visible_buckets(52, 4), (std::vector<std::int64_t>{52}));
  EXPECT_EQ(decode_visible_buckets(2048, 16), (std::vector<std::int64_t>{256, 512, 1024, 2048}));
  EXPECT_EQ(decode_visible_buckets(9216, 16), (std::vector<std::int64_t>{256, 512, 1024, 2048, 4096, 8192, 9216}));
  EXPECT_EQ(decode_visible_buckets(1000, 24), (std::vector<std::int64_t>{264, 528, 1008})) << "multiples of a block";
}

TEST(PagedEngine, GptBatchedWithChunksAndPreemptionGivesEachSequencesGreedyTokens) {
  models::GptConfig c;
  c.vocab = 97, c.positions = 64, c.layers = 2, c.hidden = 32, c.heads = 4, c.dropout = 0;
  torch::manual_seed(6);
  auto m = models::GptLMHeadModel(c);
  m->to(torch::kDouble);
  m->eval();
  expect_paged_engine_matches_alone(*m, kVocab);
}

TEST(PagedEngine, ASequenceThatCanNeverRunIsAClearError) {
  models::GptConfig c;
  c.vocab = 97, c.positions = 16, c.layers = 1, c.hidden = 16, c.heads = 2, c.dropout = 0;
  auto m = models::GptLMHeadModel(c);
  serving::SchedulerOptions o;
  o.block_size = 4, o.blocks = 3;
  PagedEngine engine(*m, torch::kCPU, torch::kFloat, o);
  try {
    engine.add(1, std::vector<std::int64_t>(12, 0), 8);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "sequence 1: 12 + 8 tokens pass the model's 16 positions (max_position_embeddings)");
  }
  EXPECT_THROW(engine.add(2, std::vector<std::int64_t>(12, 0), 2), std::invalid_argument) << "13 tokens, 3 blocks";
}

bool no_kernels() {
  return !torch::cuda::is_available() || !models::fused::kernels_built();
}

// The decode attention kernel reading through block tables, against ATen's attention over the
// gathered keys: rows of 1 to 700 keys (several chunks, then their combination) in blocks of 16
// scattered over the pool, grouped-query heads, every type the kernel takes. A small batch (a
// block a query head) and a large one (a block all the query heads of a key/value head).
void expect_paged_decode_kernel_is_atens(std::vector<std::int64_t> keys) {
  torch::manual_seed(21);
  const std::int64_t heads = 8, kv_heads = 2, block = 16, pool = 64 * 44;
  const auto batch = static_cast<std::int64_t>(keys.size());
  const auto order = torch::randperm(pool, torch::kLong);  // each row's blocks anywhere in the pool
  std::int64_t next = 0, widest = 0;
  std::vector<std::vector<std::int64_t>> tables;
  for (const auto n : keys) {
    tables.emplace_back();
    for (std::int64_t b = 0; b < (n + block - 1) / block; ++b)
      tables.back().push_back(order[next++].item<std::int64_t>());
    widest = std::max<std::int64_t>(widest, static_cast<std::int64_t>(tables.back().size()));
  }
  auto table = torch::zeros({batch, widest}, torch::kLong);
  for (std::int64_t r = 0; r < batch; ++r)
    for (std::size_t b = 0; b < tables[static_cast<std::size_t>(r)].size(); ++b)
      table[r][static_cast<std::int64_t>(b)] = tables[static_cast<std::size_t>(r)][b];
  table = table.to(torch::kCUDA);
  auto positions = (torch::tensor(keys, torch::kLong) - 1).view({batch, 1}).to(torch::kCUDA);
  const std::int64_t visible = 700;
  for (const std::int64_t dim : {64, 128}) {
    for (const auto dtype : {torch::kFloat, torch::kBFloat16, torch::kHalf}) {
      const auto options = torch::TensorOptions().dtype(dtype).device(torch::kCUDA);
      const auto k = torch::randn({pool, block, kv_heads, dim}, options);
      const auto v = torch::randn({pool, block, kv_heads, dim}, options);
      const auto q = torch::randn({batch, 1, heads, dim}, options).transpose(1, 2);
      torchrt::KernelProfile profile;
      const auto kernel = ops::paged_decode_attention(q, k, v, table, positions, visible);
      torch::cuda::synchronize();
      bool ran = false;
      for (const auto& t : profile.stop()) ran = ran || t.name.find("decode_attention") != std::string::npos;
      const auto what = "heads of " + std::to_string(dim) + ", " + std::string(c10::toString(dtype));
      EXPECT_TRUE(ran) << what << ": the kernel ran, not ATen's gather";
      const auto aten = ops::composite::paged_decode_attention(q, k, v, table, positions, visible);
      const auto truth = ops::composite::paged_decode_attention(q.to(torch::kDouble), k.to(torch::kDouble),
                                                                v.to(torch::kDouble), table, positions, visible);
      const auto kernel_error = (kernel.to(torch::kDouble) - truth).abs();
      const auto aten_error = (aten.to(torch::kDouble) - truth).abs();
      if (dtype == torch::kFloat) {
        EXPECT_LT(kernel_error.max().item<double>(), 1e-5) << what;
      } else {
        EXPECT_LE(kernel_error.mean().item<double>(), aten_error.mean().item<double>() * 1.1) << what;
        EXPECT_LE(kernel_error.max().item<double>(), aten_error.max().item<double>() * 1.5 + 1e-4) << what;
      }
    }
  }
}

TEST(PagedEngine, OnCudaThePagedDecodeKernelIsAtensAttention) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  expect_paged_decode_kernel_is_atens({1, 17, 40, 150, 700});
  std::vector<std::int64_t> many;
  for (std::int64_t r = 0; r < 64; ++r) many.push_back(1 + (r * 263) % 700);
  many.back() = 700;
  expect_paged_decode_kernel_is_atens(many);
}

// The engine on CUDA with the fused kernels (the paged decode kernel among them), in float32.
TEST(PagedEngine, OnCudaLlamaWithTheKernelsGivesEachSequencesGreedyTokens) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  auto m = test_llama(5, torch::kCUDA);
  expect_paged_engine_matches_alone(*m, kVocab, torch::kCUDA, torch::kFloat);
}

// ... and with its decode-only steps replayed as CUDA graphs.
TEST(PagedEngine, OnCudaLlamaThroughDecodeGraphsGivesEachSequencesGreedyTokens) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  auto m = test_llama(5, torch::kCUDA);
  DecodeBuckets buckets;
  buckets.enabled = true;
  expect_paged_engine_matches_alone(*m, kVocab, torch::kCUDA, torch::kFloat, buckets);
}

}  // namespace
}  // namespace xpuperf::infer
