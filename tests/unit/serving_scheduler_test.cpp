// The paged serving engine's scheduler (core/serving_scheduler.h): chunked prefill under the token
// budget, decodes first, preemption by recompute when the pool runs out, and clear errors.

#include "xpuperf/core/serving_scheduler.h"

#include <gtest/gtest.h>

namespace xpuperf::serving {
namespace {

SchedulerOptions options(std::int64_t blocks, std::int64_t budget, std::int64_t block_size = 4) {
  SchedulerOptions o;
  o.block_size = block_size;
  o.blocks = blocks;
  o.max_num_batched_tokens = budget;
  return o;
}

TEST(ServingScheduler, APromptIsPrefilledInChunksThenDecodedOneTokenAStep) {
  Scheduler s(options(100, 10));
  s.add(7, 25, 3);
  StepPlan p = s.next_step();
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.items[0].start, 0);
  EXPECT_EQ(p.items[0].count, 10);
  EXPECT_FALSE(p.items[0].samples) << "the chunk does not reach the prompt's end";
  EXPECT_EQ(s.blocks_of(7).size(), 3u) << "10 tokens in blocks of 4";
  s.step_done(p);
  p = s.next_step();
  EXPECT_EQ(p.items[0].start, 10);
  s.step_done(p);
  p = s.next_step();
  EXPECT_EQ(p.items[0].start, 20);
  EXPECT_EQ(p.items[0].count, 5);
  EXPECT_TRUE(p.items[0].samples) << "the last chunk gives the first output token";
  EXPECT_TRUE(s.step_done(p).empty());
  for (int token = 2; token <= 3; ++token) {
    p = s.next_step();
    ASSERT_EQ(p.items.size(), 1u);
    EXPECT_EQ(p.items[0].count, 1);
    EXPECT_EQ(p.items[0].start, 25 + token - 2);
    EXPECT_TRUE(p.items[0].samples);
    const auto done = s.step_done(p);
    EXPECT_EQ(done.size(), token == 3 ? 1u : 0u);
  }
  EXPECT_EQ(s.generated(7), 3);
  EXPECT_TRUE(s.finished());
  EXPECT_EQ(s.free_blocks(), 100) << "a finished sequence's blocks go back to the pool";
  EXPECT_TRUE(s.next_step().empty());
}

TEST(ServingScheduler, DecodesComeFirstAndANewPromptTakesTheRestOfTheBudget) {
  Scheduler s(options(100, 8));
  s.add(1, 4, 5);
  s.step_done(s.next_step());  // 1's prompt; it samples
  s.add(2, 20, 5);
  const StepPlan p = s.next_step();
  ASSERT_EQ(p.items.size(), 2u);
  EXPECT_EQ(p.items[0].id, 1);
  EXPECT_EQ(p.items[0].count, 1);
  EXPECT_EQ(p.items[1].id, 2);
  EXPECT_EQ(p.items[1].count, 7);
  EXPECT_EQ(p.tokens(), 8);
}

TEST(ServingScheduler, WhenThePoolRunsOutTheNewestIsPreemptedAndComputedAgain) {
  Scheduler s(options(4, 64));  // 16 tokens of cache
  s.add(1, 8, 4);
  s.add(2, 8, 4);
  StepPlan p = s.next_step();
  ASSERT_EQ(p.items.size(), 2u) << "both prompts fit: 2 blocks each";
  s.step_done(p);
  EXPECT_EQ(s.free_blocks(), 0);
  // Token 8 of each needs a third block: 2, the newest, gives its blocks to 1.
  p = s.next_step();
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.items[0].id, 1);
  EXPECT_EQ(p.preempted, std::vector<std::int64_t>{2});
  EXPECT_EQ(s.preemptions(), 1);
  EXPECT_EQ(s.waiting(), 1);
  s.step_done(p);
  // 1 runs to its end; then 2 computes its prompt and its generated token again, and goes on.
  while (s.generated(1) < 4) s.step_done(s.next_step());
  p = s.next_step();
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.items[0].id, 2);
  EXPECT_EQ(p.items[0].start, 0);
  EXPECT_EQ(p.items[0].count, 9) << "8 prompt tokens and the 1 it generated before";
  EXPECT_TRUE(p.items[0].samples);
  s.step_done(p);
  while (!s.finished()) s.step_done(s.next_step());
  EXPECT_EQ(s.generated(2), 4);
  EXPECT_EQ(s.free_blocks(), 4);
}

TEST(ServingScheduler, TheRunningLimitHoldsNewSequencesBack) {
  SchedulerOptions o = options(100, 100);
  o.max_num_seqs = 2;
  Scheduler s(o);
  for (int id = 0; id < 3; ++id) s.add(id, 4, 2);
  StepPlan p = s.next_step();
  EXPECT_EQ(p.items.size(), 2u);
  EXPECT_EQ(s.waiting(), 1);
}

TEST(ServingScheduler, BadInputIsAClearError) {
  EXPECT_THROW(Scheduler(options(0, 8)), std::invalid_argument);
  try {
    Scheduler(options(8, 0));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "max_num_batched_tokens must be 1 or more, got 0");
  }
  Scheduler s(options(4, 8));
  try {
    s.add(1, 16, 2);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "a sequence of 16 + 2 tokens needs 5 blocks of 4 tokens; the KV cache's pool has 4 (raise "
                 "kv_cache_memory_fraction, or shorten the lengths)");
  }
  s.add(2, 16, 1);  // 16 tokens: its one output token needs no block
  EXPECT_THROW(s.add(2, 4, 1), std::invalid_argument);
}

}  // namespace
}  // namespace xpuperf::serving
