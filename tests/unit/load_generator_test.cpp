// The LoadGen scenarios and the continuous-batching loop, on a backend with a simulated clock:
// every time below is exact.

#include "xpuperf/core/load_generator.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "test_util.h"

namespace xpuperf::loadgen {
namespace {

// Prefill costs 1 ms a prompt token, a decode step 10 ms whatever the batch; records what ran.
struct SimulatedBackend : Backend {
  explicit SimulatedBackend(std::int64_t slot_count) : n(slot_count) {}
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
  EXPECT_NEAR(r.tpot_ms.p50, 40.0 / 3, 1e-6);  // index ⌊2 × 0.5⌋ of (10, 13.3): q0's, as LoadGen takes it
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
  ASSERT_EQ(r.reasons.size(), 5u);
  EXPECT_NE(r.reasons[0].find("under the minimum duration of 600 s"), std::string::npos) << r.reasons[0];
  EXPECT_NE(r.reasons[1].find("2 queries, under the minimum of 100"), std::string::npos) << r.reasons[1];
  EXPECT_NE(r.reasons[2].find("over the bounds"), std::string::npos) << r.reasons[2];
  // Both first tokens over the 5 ms bound: 836 within it would be needed besides (LoadGen's odds).
  EXPECT_EQ(r.reasons[3],
            "early stopping (LoadGen's): TTFT over its 5 ms bound in 2 of 2 queries; p99 within it is shown with "
            "99 % confidence from 838 queries");
  EXPECT_EQ(r.reasons[4],
            "early stopping (LoadGen's): TPOT over its 200 ms bound in 0 of 2 queries; p99 within it is shown with "
            "99 % confidence from 459 queries");
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

TEST(LoadGenerator, EarlyStoppingNeedsLoadGensQueryCounts) {
  // The fewest queries within a bound for p99 at 99 % confidence, given those over it: what
  // LoadGen's binomial odds give (checked against a direct sum of the binomial terms).
  EXPECT_EQ(early_stopping_queries_within(0), 459);  // 0.99^459 < 0.01 <= 0.99^458
  EXPECT_EQ(early_stopping_queries_within(1), 661);
  EXPECT_EQ(early_stopping_queries_within(2), 836);
  EXPECT_EQ(early_stopping_queries_within(10), 2000);
  EXPECT_THROW(early_stopping_queries_within(-1), std::invalid_argument);

  // A Server run of 460 queries over 600 s, all within the bounds: valid. Two first tokens over the
  // TTFT bound leave p99 within it (index 455 of 460) but early stopping then needs 838 queries.
  std::vector<Query> queries;
  std::vector<QueryTiming> timings;
  for (int i = 0; i < 460; ++i) {
    const double at = 600.0 * i / 459;
    queries.push_back({at, 10, 3});
    timings.push_back({at + 0.1, at + 0.3});  // TTFT 100 ms, TPOT 100 ms
  }
  const Rules rules{600, 100, 2000, 200};
  const ScenarioResult ok = summarise("Server", 0.77, queries, timings, rules);
  EXPECT_TRUE(ok.valid) << (ok.reasons.empty() ? "" : ok.reasons[0]);
  EXPECT_EQ(ok.ttft_early_stopping.queries_needed, 459);
  EXPECT_TRUE(ok.tpot_early_stopping.met);
  for (const int i : {7, 8}) timings[i] = {queries[i].arrival_s + 3.0, queries[i].arrival_s + 3.2};
  const ScenarioResult late = summarise("Server", 0.77, queries, timings, rules);
  EXPECT_TRUE(late.latency_met);
  EXPECT_FALSE(late.valid);
  EXPECT_EQ(late.ttft_early_stopping.overlatency, 2);
  EXPECT_FALSE(late.ttft_early_stopping.met);
  ASSERT_EQ(late.reasons.size(), 1u);
  EXPECT_NE(late.reasons[0].find("TTFT over its 2000 ms bound in 2 of 460 queries"), std::string::npos)
      << late.reasons[0];
  EXPECT_EQ(to_json(late)["early_stopping"]["ttft"]["queries_needed"], 838);
}

TEST(LoadGenerator, ServerQueriesArePoissonUntilBothMinimaAreReached) {
  const Rules rules{200, 50, 0, 0};
  const auto q = server_queries(5.0, rules, Lengths::uniform({4, 8}, {1, 3}), 7);
  EXPECT_GE(q.back().arrival_s, 200.0);
  EXPECT_GE(q.size(), 50u);
  EXPECT_NEAR(static_cast<double>(q.size()) / q.back().arrival_s, 5.0, 0.5);  // ~1,000 arrivals
  for (std::size_t i = 0; i < q.size(); ++i) {
    EXPECT_GE(q[i].prompt_tokens, 4);
    EXPECT_LE(q[i].prompt_tokens, 8);
    EXPECT_GE(q[i].output_tokens, 1);
    EXPECT_LE(q[i].output_tokens, 3);
    if (i) {
      EXPECT_GT(q[i].arrival_s, q[i - 1].arrival_s);
    }
  }
  EXPECT_EQ(server_queries(5.0, rules, Lengths::uniform({4, 8}, {1, 3}), 7).back().arrival_s,
            q.back().arrival_s);  // seeded
  // A slow rate still issues the minimum count.
  EXPECT_EQ(server_queries(0.001, Rules{1, 20, 0, 0}, Lengths::uniform({1, 1}, {1, 1}), 1).size(), 20u);
  EXPECT_THROW(server_queries(0.0, rules, Lengths::uniform({1, 1}, {1, 1}), 1), std::invalid_argument);
  EXPECT_THROW(offline_queries(3, Lengths::uniform({5, 4}, {1, 1}), 1), std::invalid_argument);
}

TEST(LoadGenerator, LengthsFromAFileAreTheFilesPairsAndBadLinesAreNamed) {
  test::TempDir dir;
  const std::string file = dir.write("lengths.csv",
                                     "prompt_tokens,output_tokens\n"
                                     "# from a trace\n"
                                     "100, 20\n"
                                     "\n"
                                     "7,300   # the longest\n");
  const Lengths l = read_lengths_csv(file, 400);
  ASSERT_EQ(l.pairs.size(), 2u);
  EXPECT_EQ(l.pairs[1], std::make_pair(std::int64_t{7}, std::int64_t{300}));
  EXPECT_EQ(l.longest(), 307);
  EXPECT_EQ(l.describe(), "2 (prompt, output) pairs from " + file);
  // Queries take whole pairs, never a prompt of one and the output of another; seeded.
  const auto q = offline_queries(200, l, 3);
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  for (const auto& x : q) seen.insert({x.prompt_tokens, x.output_tokens});
  EXPECT_EQ(seen, (std::set<std::pair<std::int64_t, std::int64_t>>{{100, 20}, {7, 300}}));
  EXPECT_EQ(server_queries(2.0, Rules{10, 5, 0, 0}, l, 4).size(), server_queries(2.0, Rules{10, 5, 0, 0}, l, 4).size());

  const auto error_of = [&](const std::string& text, std::int64_t max_tokens = 400) {
    try {
      read_lengths_csv(dir.write("bad.csv", text), max_tokens);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("10,20\n10;20\n"), dir.path() + "/bad.csv:2: '10;20' is not prompt_tokens,output_tokens");
  EXPECT_EQ(error_of("10,2x\n"), dir.path() + "/bad.csv:1: '10,2x' is not prompt_tokens,output_tokens");
  EXPECT_EQ(error_of("0,20\n"), dir.path() + "/bad.csv:1: lengths must be at least 1 token, got 0,20");
  EXPECT_EQ(error_of("300,200\n"), dir.path() + "/bad.csv:1: 300 + 200 tokens exceed max_seq_len 400");
  EXPECT_EQ(error_of("# nothing\n"), dir.path() + "/bad.csv: no prompt_tokens,output_tokens line");
  // The largest 64-bit length must not wrap past the check; a byte-order mark is not part of line 1.
  EXPECT_EQ(error_of("9223372036854775807,8\n"),
            dir.path() + "/bad.csv:1: 9223372036854775807 + 8 tokens exceed max_seq_len 400");
  EXPECT_EQ(error_of("8,9223372036854775807\n"),
            dir.path() + "/bad.csv:1: 8 + 9223372036854775807 tokens exceed max_seq_len 400");
  EXPECT_EQ(error_of("\xEF\xBB\xBF"
                     "8,4\n"),
            "no error");
  EXPECT_THROW(read_lengths_csv(dir.path() + "/missing.csv", 400), std::runtime_error);
  // Uniform ranges say so.
  EXPECT_EQ(Lengths::uniform({4, 8}, {1, 3}).describe(),
            "prompt tokens uniform in [4, 8], output tokens uniform in [1, 3]");
}

TEST(LoadGenerator, PercentilesAreLoadGensAndTheBestRateMeetsTheBounds) {
  std::vector<double> v(100);
  std::iota(v.begin(), v.end(), 1.0);
  const Percentiles p = percentiles(v);  // the value at index ⌊100 × p⌋ of 1..100
  EXPECT_EQ(p.p50, 51);
  EXPECT_EQ(p.p90, 91);
  EXPECT_EQ(p.p99, 100);
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
