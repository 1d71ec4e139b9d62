#pragma once
// The load of a language-model server, as MLPerf's LoadGen makes and judges it, torch-free: the
// queries of the Offline scenario (all at once) and of the Server scenario (Poisson arrivals at a
// target rate), a continuous-batching loop that serves them on any Backend (a free slot takes an
// arrived query, whose prompt is prefilled; then every busy slot gets one more token), and the
// results: time to first token (TTFT) and time per output token (TPOT) p50 / p90 / p99, and
// whether the run counts by LoadGen's rules (its minimum duration and query count, the p99
// latency bounds, and for Server its early stopping: enough queries to show the p99 bound holds
// with 99 % confidence).

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace xpuperf::loadgen {

struct Query {
  double arrival_s = 0;  // after the run starts
  std::int64_t prompt_tokens = 0, output_tokens = 0;
};

struct LengthRange {  // tokens, drawn uniformly from [min, max]
  std::int64_t min = 1, max = 1;
};

// Where a query's prompt and output lengths come from: each drawn uniformly from its range, or,
// when `pairs` is not empty, a (prompt, output) pair drawn from them with replacement (the
// lengths of a real trace or dataset, as MLPerf's LLM benchmarks take theirs from a dataset).
struct Lengths {
  LengthRange prompt, output;
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  std::string source;  // the file the pairs came from
  static Lengths uniform(LengthRange prompt, LengthRange output) {
    Lengths l;
    l.prompt = prompt;
    l.output = output;
    return l;
  }
  std::int64_t longest() const;  // the most tokens (prompt + output) a query can have
  std::string describe() const;
};
// Reads "prompt_tokens,output_tokens" lines (blank lines, '#' comments and a first line of names
// are skipped). Throws std::runtime_error naming the file and line: a missing file, a line that is
// not two positive integers, a pair longer than `max_tokens` in all, a file with no pair.
Lengths read_lengths_csv(const std::string& path, std::int64_t max_tokens);

// LoadGen's rules for a run that counts, and its latency bounds (MLPerf's llama2-70b Server:
// TTFT p99 ≤ 2 s, TPOT p99 ≤ 200 ms; every scenario: ≥ 600 s and ≥ 100 queries).
struct Rules {
  double min_duration_s = 600;
  std::int64_t min_queries = 100;
  double ttft_bound_ms = 2000, tpot_bound_ms = 200;
  // A run under LoadGen's own minima (600 s, 100 queries) or, for Server, short of its early
  // stopping count is not valid even when it meets the minima above (set lower for a quick look);
  // false only for tests of the other rules.
  bool loadgen_minima = true;
};
inline constexpr double kLoadGenMinDuration = 600;
inline constexpr std::int64_t kLoadGenMinQueries = 100;

// Server: arrivals with exponential gaps at `rate` queries/s (seeded), issued until both the
// minimum duration and the minimum query count are reached, as LoadGen issues them.
std::vector<Query> server_queries(double rate, const Rules& rules, const Lengths& lengths, std::uint64_t seed);
// Offline: `count` queries, all there at the start.
std::vector<Query> offline_queries(std::int64_t count, const Lengths& lengths, std::uint64_t seed);

// What serves the queries: a fixed number of slots (sequences in flight).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::int64_t slots() const = 0;
  // Runs query `index`'s prompt into `slot`; its first output token is ready when this returns.
  virtual void prefill(std::int64_t slot, const Query& query, std::size_t index) = 0;
  // One more token for each of `busy` (ascending slots); ready when this returns.
  virtual void decode(const std::vector<std::int64_t>& busy) = 0;
};

struct Clock {
  std::function<double()> now;             // seconds
  std::function<void(double)> wait_until;  // until now() reaches the argument
  static Clock steady();                   // the real one
};

struct QueryTiming {
  double first_token_s = -1, done_s = -1;  // after the run starts
};

// Serves `queries` (in arrival order) with continuous batching: before each decode step, every
// query that has arrived takes a free slot (the lowest) and is prefilled; a query leaves its slot
// after its last token. Returns each query's timing.
std::vector<QueryTiming> serve(const std::vector<Query>& queries, Backend& backend, const Clock& clock);

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0;
};
// Percentiles as LoadGen takes them: the value at index ⌊n × p⌋ of the n sorted ones (0 for none).
Percentiles percentiles(std::vector<double> values);

// LoadGen's early stopping (its early_stopping.cc): with `overlatency` queries over a bound, the
// fewest queries within it such that so few over it would happen with odds under 1 − confidence
// if the true share within it were only `percentile` (binomial). A run of at least this many plus
// `overlatency` queries shows the percentile is within the bound: 459 with none over at p99 and
// 99 % confidence, 661 with one.
std::int64_t early_stopping_queries_within(std::int64_t overlatency, double percentile = 0.99,
                                           double confidence = 0.99);

// One bound's early stopping in a Server run.
struct EarlyStopping {
  std::int64_t overlatency = 0;     // queries over the bound
  std::int64_t queries_needed = 0;  // overlatency + early_stopping_queries_within(overlatency)
  bool met = false;
};

struct ScenarioResult {
  std::string scenario;    // Offline, Server
  double target_rate = 0;  // Server: scheduled queries/s
  std::int64_t queries = 0;
  double duration_s = 0;    // first arrival to last token
  double issue_span_s = 0;  // first to last arrival (Server), or the duration (Offline)
  double queries_per_second = 0, output_tokens_per_second = 0;
  Percentiles ttft_ms, tpot_ms;
  bool latency_met = false;                                // p99 TTFT and TPOT within the bounds
  EarlyStopping ttft_early_stopping, tpot_early_stopping;  // Server
  bool valid = false;  // LoadGen's minimum duration and query count, and (Server) the bounds and early stopping
  std::vector<std::string> reasons;  // why not valid
};

ScenarioResult summarise(const std::string& scenario, double target_rate, const std::vector<Query>& queries,
                         const std::vector<QueryTiming>& timings, const Rules& rules);
nlohmann::json to_json(const ScenarioResult& r);

// The highest target rate among `server` runs whose p99 latencies meet the bounds; 0 when none.
double highest_rate_within_bounds(const std::vector<ScenarioResult>& server);

}  // namespace xpuperf::loadgen
