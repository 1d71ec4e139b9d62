#include "xpuperf/core/load_generator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace xpuperf::loadgen {

namespace {

std::int64_t draw(std::mt19937_64& rng, LengthRange r) {
  if (r.min < 1 || r.max < r.min)
    throw std::invalid_argument("a token length range [" + std::to_string(r.min) + ", " + std::to_string(r.max) +
                                "] is not 1 <= min <= max");
  return std::uniform_int_distribution<std::int64_t>(r.min, r.max)(rng);
}

std::string number(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

std::string seconds(double s) {
  return number(s, s >= 10 ? 0 : 3) + " s";
}

}  // namespace

std::vector<Query> server_queries(double rate, const Rules& rules, LengthRange prompt, LengthRange output,
                                  std::uint64_t seed) {
  if (!(rate > 0)) throw std::invalid_argument("a Server rate must be positive, got " + number(rate, 3));
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  std::vector<Query> queries;
  double t = 0;
  while (t < rules.min_duration_s || static_cast<std::int64_t>(queries.size()) < rules.min_queries) {
    t += gap(rng);
    queries.push_back({t, draw(rng, prompt), draw(rng, output)});
  }
  return queries;
}

std::vector<Query> offline_queries(std::int64_t count, LengthRange prompt, LengthRange output, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Query> queries;
  for (std::int64_t i = 0; i < count; ++i) queries.push_back({0.0, draw(rng, prompt), draw(rng, output)});
  return queries;
}

Clock Clock::steady() {
  Clock c;
  c.now = [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  c.wait_until = [now = c.now](double t) {
    const double left = t - now();
    if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
  };
  return c;
}

std::vector<QueryTiming> serve(const std::vector<Query>& queries, Backend& backend, const Clock& clock) {
  for (std::size_t i = 1; i < queries.size(); ++i)
    if (queries[i].arrival_s < queries[i - 1].arrival_s)
      throw std::invalid_argument("serve: queries must come in arrival order");
  std::vector<QueryTiming> timing(queries.size());
  std::set<std::int64_t> free;
  for (std::int64_t s = 0; s < backend.slots(); ++s) free.insert(s);
  if (free.empty()) throw std::invalid_argument("serve: the backend has no slot");
  struct Busy {
    std::size_t query;
    std::int64_t produced;
  };
  std::map<std::int64_t, Busy> busy;  // slot -> its query
  const double start = clock.now();
  const auto elapsed = [&] { return clock.now() - start; };
  std::size_t next = 0, done = 0;
  while (done < queries.size()) {
    while (next < queries.size() && queries[next].arrival_s <= elapsed() && !free.empty()) {
      const std::int64_t slot = *free.begin();
      free.erase(free.begin());
      backend.prefill(slot, queries[next], next);
      timing[next].first_token_s = elapsed();
      if (queries[next].output_tokens <= 1) {
        timing[next].done_s = timing[next].first_token_s;
        free.insert(slot);
        ++done;
      } else {
        busy[slot] = {next, 1};
      }
      ++next;
    }
    if (busy.empty()) {
      if (next < queries.size() && !free.empty()) clock.wait_until(start + queries[next].arrival_s);
      continue;
    }
    std::vector<std::int64_t> slots;
    for (const auto& [slot, b] : busy) slots.push_back(slot);
    backend.decode(slots);
    const double t = elapsed();
    for (auto it = busy.begin(); it != busy.end();) {
      if (++it->second.produced >= queries[it->second.query].output_tokens) {
        timing[it->second.query].done_s = t;
        free.insert(it->first);
        ++done;
        it = busy.erase(it);
      } else {
        ++it;
      }
    }
  }
  return timing;
}

Percentiles percentiles(std::vector<double> values) {
  Percentiles p;
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  const auto rank = [&](double q) {
    const auto at = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
    return values[std::min(values.size(), std::max<std::size_t>(at, 1)) - 1];
  };
  p.p50 = rank(0.50);
  p.p90 = rank(0.90);
  p.p99 = rank(0.99);
  return p;
}

ScenarioResult summarise(const std::string& scenario, double target_rate, const std::vector<Query>& queries,
                         const std::vector<QueryTiming>& timings, const Rules& rules) {
  ScenarioResult r;
  r.scenario = scenario;
  r.target_rate = target_rate;
  r.queries = static_cast<std::int64_t>(queries.size());
  if (queries.empty() || timings.size() != queries.size()) {
    r.reasons.push_back("no query was served");
    return r;
  }
  std::vector<double> ttft, tpot;
  double last = 0, tokens = 0;
  for (std::size_t i = 0; i < queries.size(); ++i) {
    ttft.push_back((timings[i].first_token_s - queries[i].arrival_s) * 1e3);
    if (queries[i].output_tokens > 1)
      tpot.push_back((timings[i].done_s - timings[i].first_token_s) * 1e3 /
                     static_cast<double>(queries[i].output_tokens - 1));
    last = std::max(last, timings[i].done_s);
    tokens += static_cast<double>(queries[i].output_tokens);
  }
  r.duration_s = last - queries.front().arrival_s;
  r.issue_span_s = scenario == "Server" ? queries.back().arrival_s : r.duration_s;
  r.queries_per_second = r.duration_s > 0 ? static_cast<double>(r.queries) / r.duration_s : 0;
  r.output_tokens_per_second = r.duration_s > 0 ? tokens / r.duration_s : 0;
  r.ttft_ms = percentiles(ttft);
  r.tpot_ms = percentiles(tpot);
  r.latency_met = r.ttft_ms.p99 <= rules.ttft_bound_ms && r.tpot_ms.p99 <= rules.tpot_bound_ms;
  const double min_duration =
      rules.loadgen_minima ? std::max(rules.min_duration_s, kLoadGenMinDuration) : rules.min_duration_s;
  const std::int64_t min_queries =
      rules.loadgen_minima ? std::max(rules.min_queries, kLoadGenMinQueries) : rules.min_queries;
  if (r.issue_span_s < min_duration)
    r.reasons.push_back("ran " + seconds(r.issue_span_s) + ", under the minimum duration of " + seconds(min_duration) +
                        (min_duration > rules.min_duration_s ? " (LoadGen's)" : ""));
  if (r.queries < min_queries)
    r.reasons.push_back(std::to_string(r.queries) + " queries, under the minimum of " + std::to_string(min_queries) +
                        (min_queries > rules.min_queries ? " (LoadGen's)" : ""));
  if (scenario == "Server" && !r.latency_met)
    r.reasons.push_back("p99 TTFT " + number(r.ttft_ms.p99, 1) + " ms / TPOT " + number(r.tpot_ms.p99, 1) +
                        " ms over the bounds " + number(rules.ttft_bound_ms, 0) + " / " +
                        number(rules.tpot_bound_ms, 0) + " ms");
  r.valid = r.reasons.empty();
  return r;
}

nlohmann::json to_json(const ScenarioResult& r) {
  const auto p = [](const Percentiles& x) { return nlohmann::json{{"p50", x.p50}, {"p90", x.p90}, {"p99", x.p99}}; };
  nlohmann::json j = {{"scenario", r.scenario},
                      {"queries", r.queries},
                      {"duration_s", r.duration_s},
                      {"queries_per_second", r.queries_per_second},
                      {"output_tokens_per_second", r.output_tokens_per_second},
                      {"ttft_ms", p(r.ttft_ms)},
                      {"tpot_ms", p(r.tpot_ms)},
                      {"latency_met", r.latency_met},
                      {"valid", r.valid},
                      {"invalid_because", r.reasons}};
  if (r.scenario == "Server") j["target_rate"] = r.target_rate;
  return j;
}

double highest_rate_within_bounds(const std::vector<ScenarioResult>& server) {
  double best = 0;
  for (const auto& r : server)
    if (r.latency_met) best = std::max(best, r.target_rate);
  return best;
}

}  // namespace xpuperf::loadgen
