#include "xpuperf/core/load_generator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "xpuperf/core/strings.h"

namespace xpuperf::loadgen {

namespace {

std::int64_t draw(std::mt19937_64& rng, LengthRange r) {
  if (r.min < 1 || r.max < r.min)
    throw std::invalid_argument("a token length range [" + std::to_string(r.min) + ", " + std::to_string(r.max) +
                                "] is not 1 <= min <= max");
  return std::uniform_int_distribution<std::int64_t>(r.min, r.max)(rng);
}

Query draw_query(std::mt19937_64& rng, const Lengths& lengths, double arrival_s) {
  if (lengths.pairs.empty()) {
    const std::int64_t prompt = draw(rng, lengths.prompt);
    return {arrival_s, prompt, draw(rng, lengths.output)};
  }
  const auto i = std::uniform_int_distribution<std::size_t>(0, lengths.pairs.size() - 1)(rng);
  return {arrival_s, lengths.pairs[i].first, lengths.pairs[i].second};
}

std::string seconds(double s) {
  return fixed_digits(s, s >= 10 ? 0 : 3) + " s";
}

}  // namespace

std::int64_t Lengths::longest() const {
  if (pairs.empty()) return prompt.max + output.max;
  std::int64_t most = 0;
  for (const auto& [p, o] : pairs) most = std::max(most, p + o);
  return most;
}

std::string Lengths::describe() const {
  if (!pairs.empty()) return std::to_string(pairs.size()) + " (prompt, output) pairs from " + source;
  return "prompt tokens uniform in [" + std::to_string(prompt.min) + ", " + std::to_string(prompt.max) +
         "], output tokens uniform in [" + std::to_string(output.min) + ", " + std::to_string(output.max) + "]";
}

Lengths read_lengths_csv(const std::string& path, std::int64_t max_tokens) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the lengths file (prompt_tokens,output_tokens lines)");
  Lengths l;
  l.source = path;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (number == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // a UTF-8 byte-order mark
    const std::string text = trim(line.substr(0, line.find('#')));
    if (text.empty()) continue;
    const auto where = path + ":" + std::to_string(number) + ": ";
    const auto comma = text.find(',');
    std::int64_t p = 0, o = 0;
    try {
      if (comma == std::string::npos) throw std::invalid_argument("no comma");
      std::size_t used_p = 0, used_o = 0;
      const std::string ps = trim(text.substr(0, comma)), os = trim(text.substr(comma + 1));
      p = std::stoll(ps, &used_p);
      o = std::stoll(os, &used_o);
      if (used_p != ps.size() || used_o != os.size()) throw std::invalid_argument("trailing text");
    } catch (const std::exception&) {
      if (l.pairs.empty() && number == 1 && text.find_first_of("0123456789") == std::string::npos)
        continue;  // a header line of names
      throw std::runtime_error(where + "'" + text + "' is not prompt_tokens,output_tokens");
    }
    if (p < 1 || o < 1) throw std::runtime_error(where + "lengths must be at least 1 token, got " + text);
    if (p > max_tokens || o > max_tokens - p)  // written so that no sum can overflow
      throw std::runtime_error(where + std::to_string(p) + " + " + std::to_string(o) + " tokens exceed max_seq_len " +
                               std::to_string(max_tokens));
    l.pairs.emplace_back(p, o);
  }
  if (l.pairs.empty()) throw std::runtime_error(path + ": no prompt_tokens,output_tokens line");
  return l;
}

std::vector<Query> server_queries(double rate, const Rules& rules, const Lengths& lengths, std::uint64_t seed) {
  if (!(rate > 0)) throw std::invalid_argument("a Server rate must be positive, got " + fixed_digits(rate, 3));
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  std::vector<Query> queries;
  double t = 0;
  while (t < rules.min_duration_s || static_cast<std::int64_t>(queries.size()) < rules.min_queries) {
    t += gap(rng);
    queries.push_back(draw_query(rng, lengths, t));
  }
  return queries;
}

std::vector<Query> offline_queries(std::int64_t count, const Lengths& lengths, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Query> queries;
  for (std::int64_t i = 0; i < count; ++i) queries.push_back(draw_query(rng, lengths, 0.0));
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
  const auto at = [&](double q) {
    const auto i = static_cast<std::size_t>(q * static_cast<double>(values.size()));
    return values[std::min(i, values.size() - 1)];
  };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  return p;
}

namespace {

// The odds of `over` or fewer of within + over queries over the bound when each is over it with
// probability 1 − percentile: the binomial distribution's CDF, summed in logs.
double odds_of_so_few_over(std::int64_t within, std::int64_t over, double percentile) {
  const double n = static_cast<double>(within + over);
  const double log_p = std::log(percentile), log_q = std::log1p(-percentile);
  double sum = 0;
  for (std::int64_t x = 0; x <= over; ++x) {
    const double k = static_cast<double>(x);
    const double log_choose = std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1);
    sum += std::exp(log_choose + k * log_q + (n - k) * log_p);
  }
  return sum;
}

}  // namespace

std::int64_t early_stopping_queries_within(std::int64_t overlatency, double percentile, double confidence) {
  if (overlatency < 0 || !(percentile > 0 && percentile < 1) || !(confidence > 0 && confidence < 1))
    throw std::invalid_argument("early stopping: needs overlatency >= 0 and percentile, confidence in (0, 1)");
  const auto passes = [&](std::int64_t within) {
    return odds_of_so_few_over(within, overlatency, percentile) < 1 - confidence;
  };
  std::int64_t high = 1;
  while (!passes(high)) high *= 2;
  std::int64_t low = high / 2;  // fails (or 0), high passes: the odds fall as `within` grows
  while (high - low > 1) {
    const std::int64_t mid = low + (high - low) / 2;
    (passes(mid) ? high : low) = mid;
  }
  return high;
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
    r.reasons.push_back("p99 TTFT " + fixed_digits(r.ttft_ms.p99, 1) + " ms / TPOT " + fixed_digits(r.tpot_ms.p99, 1) +
                        " ms over the bounds " + fixed_digits(rules.ttft_bound_ms, 0) + " / " +
                        fixed_digits(rules.tpot_bound_ms, 0) + " ms");
  if (scenario == "Server") {
    // LoadGen counts TTFT and TPOT each against its bound, over all the queries issued.
    const auto early = [&](const std::vector<double>& ms, double bound, const char* what) {
      EarlyStopping e;
      e.overlatency = std::count_if(ms.begin(), ms.end(), [&](double v) { return v > bound; });
      e.queries_needed = e.overlatency + early_stopping_queries_within(e.overlatency);
      e.met = r.queries >= e.queries_needed;
      if (!e.met && rules.loadgen_minima)
        r.reasons.push_back("early stopping (LoadGen's): " + std::string(what) + " over its " + fixed_digits(bound, 0) +
                            " ms bound in " + std::to_string(e.overlatency) + " of " + std::to_string(r.queries) +
                            " queries; p99 within it is shown with 99 % confidence from " +
                            std::to_string(e.queries_needed) + " queries");
      return e;
    };
    r.ttft_early_stopping = early(ttft, rules.ttft_bound_ms, "TTFT");
    r.tpot_early_stopping = early(tpot, rules.tpot_bound_ms, "TPOT");
  }
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
  if (r.scenario == "Server") {
    j["target_rate"] = r.target_rate;
    const auto e = [](const EarlyStopping& x) {
      return nlohmann::json{{"overlatency", x.overlatency}, {"queries_needed", x.queries_needed}, {"met", x.met}};
    };
    j["early_stopping"] = {{"ttft", e(r.ttft_early_stopping)}, {"tpot", e(r.tpot_early_stopping)}};
  }
  return j;
}

double highest_rate_within_bounds(const std::vector<ScenarioResult>& server) {
  double best = 0;
  for (const auto& r : server)
    if (r.latency_met) best = std::max(best, r.target_rate);
  return best;
}

}  // namespace xpuperf::loadgen
