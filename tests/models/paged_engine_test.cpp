// The paged serving engine (infer/paged_engine.h): 32 prompts of mixed lengths run together, with
// chunked prefill and preemption, give each sequence the greedy tokens it gives alone.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "xpuperf/infer/paged_engine.h"
#include "xpuperf/models/gpt.h"
#include "xpuperf/models/llama.h"

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
std::vector<std::int64_t> greedy_alone(models::CausalDecoder& decoder, const Request& r) {
  torch::NoGradGuard no_grad;
  auto seq = torch::tensor(r.prompt, torch::kLong).view({1, -1});
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < r.output; ++i) {
    const auto next = decoder.decoder_logits(seq, nullptr, 1).select(1, -1).argmax(-1, true);
    out.push_back(next.item<std::int64_t>());
    seq = torch::cat({seq, next}, 1);
  }
  return out;
}

// Float64, so that the order of a batched sum cannot turn a near tie.
void expect_paged_engine_matches_alone(models::CausalDecoder& decoder, std::int64_t vocab) {
  const auto requests = mixed_requests(32, vocab);
  serving::SchedulerOptions o;
  o.block_size = 4;
  o.blocks = 30;                   // 120 tokens of cache for 32 sequences of up to 50: preemptions
  o.max_num_batched_tokens = 24;   // most prompts come in chunks
  o.max_num_seqs = 12;
  PagedEngine engine(decoder, torch::kCPU, torch::kDouble, o);
  for (std::size_t i = 0; i < requests.size(); ++i)
    engine.add(static_cast<std::int64_t>(i), requests[i].prompt, requests[i].output);
  std::int64_t steps = 0, mixed = 0, most_sequences = 0;
  while (!engine.finished()) {
    const auto r = engine.step();
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
  for (std::size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(engine.output(static_cast<std::int64_t>(i)), greedy_alone(decoder, requests[i])) << "sequence " << i;
}

TEST(PagedEngine, LlamaBatchedWithChunksAndPreemptionGivesEachSequencesGreedyTokens) {
  models::LlamaConfig c;
  c.vocab = 97, c.hidden = 32, c.intermediate = 48, c.layers = 2, c.heads = 4, c.kv_heads = 2;
  torch::manual_seed(5);
  auto m = models::LlamaForCausalLM(c);
  m->to(torch::kDouble);
  m->eval();
  expect_paged_engine_matches_alone(*m, c.vocab);
}

TEST(PagedEngine, GptBatchedWithChunksAndPreemptionGivesEachSequencesGreedyTokens) {
  models::GptConfig c;
  c.vocab = 97, c.positions = 64, c.layers = 2, c.hidden = 32, c.heads = 4, c.dropout = 0;
  torch::manual_seed(6);
  auto m = models::GptLMHeadModel(c);
  m->to(torch::kDouble);
  m->eval();
  expect_paged_engine_matches_alone(*m, c.vocab);
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

}  // namespace
}  // namespace xpuperf::infer
