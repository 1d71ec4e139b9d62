// The LoadGen scenarios and the continuous-batching loop, on a backend with a simulated clock:
// every time below is exact.

#include "xpuperf/core/load_generator.h"

#include <gtest/gtest.h>

#include <numeric>

namespace xpuperf::loadgen {
namespace {

// Prefill costs 1 ms a prompt token, a decode step 10 ms whatever the batch; records what ran.
struct SimulatedBackend : Backend {
  explicit SimulatedBackend(std::int64_t n) : n(n) {}
  std::int64_t slots() const override { return n; }
  void prefill(std::int64_t slot, const Query& q, std::size_t index) override {
    now += 1e-3 * static_cast<double>(q.prompt_tokens);
    log.push_back("p" + std::to_string(index) + "@" + std::to_string(slot));
  }
  void decode(const std::vector<std::int64_t>& busy) override {
    now += 10e-3;
    std::string s = "d";
    for (const auto slot : busy) s += std::to_string(slot);
    log.push_back(s);
  }
  Clock clock() {
    return {[this] { return now; }, [this](double t) { now = std::max(now, t); }};
  }
  std::int64_t n;
  double now = 100;  // the run starts at an arbitrary time
  std::vector<std::string> log;
};

TEST(LoadGenerator, OneSlotServesQueriesInTurn) {
  SimulatedBackend backend(1);
  const std::vector<Query> queries = {{0.0, 20, 3}, {0.0, 10, 2}};
  const auto t = serve(queries, backend, backend.clock());
  EXPECT_EQ(backend.log, (std::vector<std::string>{"p0@0", "d0", "d0", "p1@0", "d0"}));
  EXPECT_NEAR(t[0].first_token_s, 0.020, 1e-9);
  EXPECT_NEAR(t[0].done_s, 0.040, 1e-9);
  EXPECT_NEAR(t[1].first_token_s, 0.050, 1e-9);  // waited for the slot
  EXPECT_NEAR(t[1].done_s, 0.060, 1e-9);
}

TEST(LoadGenerator, ArrivalsJoinTheRunningBatchAndIdleTimeIsWaited) {
  SimulatedBackend backend(2);
  // q1 arrives during q0's first decode step and joins before the next one; q2 comes after all is
  // done, so the loop waits for it.
  const std::vector<Query> queries = {{0.0, 10, 4}, {0.015, 10, 2}, {1.0, 5, 1}};
  const auto t = serve(queries, backend, backend.clock());
  EXPECT_EQ(backend.log, (std::vector<std::string>{"p0@0", "d0", "p1@1", "d01", "d0", "p2@0"}));
  EXPECT_NEAR(t[1].first_token_s - queries[1].arrival_s, 0.030 - 0.015, 1e-9);
  EXPECT_NEAR(t[1].done_s, 0.040, 1e-9);
  EXPECT_NEAR(t[0].done_s, 0.050, 1e-9);
  EXPECT_NEAR(t[2].first_token_s, 1.005, 1e-9);  // a one-token answer is done at its first token
  EXPECT_NEAR(t[2].done_s, 1.005, 1e-9);

  const Rules rules{1.0, 3, 20, 14, /*loadgen_minima=*/false};
  const ScenarioResult r = summarise("Server", 2.0, queries, t, rules);
  EXPECT_NEAR(r.ttft_ms.p99, 15.0, 1e-6);      // q1's
  EXPECT_NEAR(r.tpot_ms.p50, 10.0, 1e-6);      // q1
  EXPECT_NEAR(r.tpot_ms.p99, 40.0 / 3, 1e-6);  // q0: 3 tokens in 40 ms after its first, q1's prefill between
  EXPECT_NEAR(r.duration_s, 1.005, 1e-9);
  EXPECT_TRUE(r.latency_met);
  EXPECT_TRUE(r.valid) << (r.reasons.empty() ? "" : r.reasons[0]);
}

TEST(LoadGenerator, ARunShorterOrSmallerThanTheRulesIsInvalidAndSaysWhy) {
  SimulatedBackend backend(1);
  const std::vector<Query> queries = {{0.0, 10, 2}, {0.001, 10, 2}};
  const auto t = serve(queries, backend, backend.clock());
  const ScenarioResult r = summarise("Server", 1.0, queries, t, Rules{600, 100, 5, 200});
  EXPECT_FALSE(r.valid);
  ASSERT_EQ(r.reasons.size(), 3u);
  EXPECT_NE(r.reasons[0].find("under the minimum duration of 600 s"), std::string::npos) << r.reasons[0];
  EXPECT_NE(r.reasons[1].find("2 queries, under the minimum of 100"), std::string::npos) << r.reasons[1];
  EXPECT_NE(r.reasons[2].find("over the bounds"), std::string::npos) << r.reasons[2];
  // Offline has no latency bound.
  const ScenarioResult o = summarise("Offline", 0, queries, t, Rules{0.01, 2, 5, 200, false});
  EXPECT_TRUE(o.valid) << (o.reasons.empty() ? "" : o.reasons[0]);
  // Minima set under LoadGen's shorten the run but do not make it count.
  const ScenarioResult quick = summarise("Offline", 0, queries, t, Rules{0.01, 2, 5, 200});
  ASSERT_EQ(quick.reasons.size(), 2u);
  EXPECT_EQ(quick.reasons[0], "ran 0.040 s, under the minimum duration of 600 s (LoadGen's)");
  EXPECT_EQ(quick.reasons[1], "2 queries, under the minimum of 100 (LoadGen's)");
  EXPECT_NEAR(o.output_tokens_per_second, 4 / 0.040, 1e-6);
}

TEST(LoadGenerator, ServerQueriesArePoissonUntilBothMinimaAreReached) {
  const Rules rules{200, 50, 0, 0};
  const auto q = server_queries(5.0, rules, {4, 8}, {1, 3}, 7);
  EXPECT_GE(q.back().arrival_s, 200.0);
  EXPECT_GE(q.size(), 50u);
  EXPECT_NEAR(static_cast<double>(q.size()) / q.back().arrival_s, 5.0, 0.5);  // ~1,000 arrivals
  for (std::size_t i = 0; i < q.size(); ++i) {
    EXPECT_GE(q[i].prompt_tokens, 4);
    EXPECT_LE(q[i].prompt_tokens, 8);
    EXPECT_GE(q[i].output_tokens, 1);
    EXPECT_LE(q[i].output_tokens, 3);
    if (i) EXPECT_GT(q[i].arrival_s, q[i - 1].arrival_s);
  }
  EXPECT_EQ(server_queries(5.0, rules, {4, 8}, {1, 3}, 7).back().arrival_s, q.back().arrival_s);  // seeded
  // A slow rate still issues the minimum count.
  EXPECT_EQ(server_queries(0.001, Rules{1, 20, 0, 0}, {1, 1}, {1, 1}, 1).size(), 20u);
  EXPECT_THROW(server_queries(0.0, rules, {1, 1}, {1, 1}, 1), std::invalid_argument);
  EXPECT_THROW(offline_queries(3, {5, 4}, {1, 1}, 1), std::invalid_argument);
}

TEST(LoadGenerator, PercentilesAreNearestRankAndTheBestRateMeetsTheBounds) {
  std::vector<double> v(100);
  std::iota(v.begin(), v.end(), 1.0);
  const Percentiles p = percentiles(v);
  EXPECT_EQ(p.p50, 50);
  EXPECT_EQ(p.p90, 90);
  EXPECT_EQ(p.p99, 99);
  EXPECT_EQ(percentiles({7}).p99, 7);
  ScenarioResult a, b, c;
  a.target_rate = 1, a.latency_met = true;
  b.target_rate = 4, b.latency_met = false;
  c.target_rate = 2, c.latency_met = true;
  EXPECT_EQ(highest_rate_within_bounds({a, b, c}), 2);
  EXPECT_EQ(highest_rate_within_bounds({b}), 0);
}

}  // namespace
}  // namespace xpuperf::loadgen
