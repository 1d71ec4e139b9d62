#include "xpuperf/infer/serving_sweep.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <sstream>

#include "xpuperf/core/load_generator.h"
#include "xpuperf/core/strings.h"
#include "xpuperf/infer/generation.h"
#include "xpuperf/infer/paged_engine.h"
#include "xpuperf/models/paged_kv.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/kernel_profile.h"

namespace xpuperf::infer {

using nlohmann::json;

std::vector<std::int64_t> sweep_concurrencies(std::int64_t max) {
  std::vector<std::int64_t> out;
  for (std::int64_t c = 1; c <= max; c *= 2) out.push_back(c);
  if (!out.empty() && out.back() != max) out.push_back(max);
  return out;
}

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::int64_t point_queries(const SweepSettings& s, std::int64_t concurrency) {
  return s.queries > 0 ? s.queries : std::max<std::int64_t>(4, 2 * concurrency);
}

double block_bytes(const SweepSettings& s, models::CausalDecoder& decoder, torch::Dtype dtype) {
  return models::PagedKvCache::bytes_per_block(decoder.decoder_layers(), s.block_size, decoder.kv_heads(),
                                               decoder.head_dim(),
                                               static_cast<std::int64_t>(torch::elementSize(dtype)));
}

// The device kernels of the profiled steps, summed by name, longest first, with their time a step.
json kernels_json(const std::vector<torchrt::KernelTime>& kernels, std::int64_t steps, double wall_ms) {
  json rows = json::array();
  double total = 0;
  for (const auto& k : kernels) total += k.total_ms;
  for (std::size_t i = 0; i < kernels.size() && i < 15; ++i)
    rows.push_back({{"name", kernels[i].name},
                    {"ms_per_step", kernels[i].total_ms / static_cast<double>(steps)},
                    {"calls_per_step", static_cast<double>(kernels[i].calls) / static_cast<double>(steps)}});
  return {{"steps", steps},
          {"step_ms", wall_ms / static_cast<double>(steps)},
          {"device_busy_ms_per_step", total / static_cast<double>(steps)},
          {"kernels", rows}};
}

std::string profile_text(const json& profile) {
  std::ostringstream out;
  if (profile.contains("error")) return "    no kernel profile: " + profile["error"].get<std::string>() + "\n";
  out << "    " << profile["steps"].get<std::int64_t>() << " steps profiled: " << fixed_digits(profile["step_ms"], 2)
      << " ms a step, the device busy " << fixed_digits(profile["device_busy_ms_per_step"], 2)
      << " ms of it; by kernel:\n";
  for (const auto& k : profile["kernels"]) {
    std::string name = k["name"];
    if (name.size() > 90) name = name.substr(0, 87) + "...";
    out << "      " << fixed_digits(k["ms_per_step"], 3) << " ms, " << fixed_digits(k["calls_per_step"], 1)
        << " calls  " << name << "\n";
  }
  return out.str();
}

json percentiles_json(std::vector<double> values) {
  const auto p = loadgen::percentiles(std::move(values));
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}};
}

using Pairs = std::vector<std::pair<std::int64_t, std::int64_t>>;

// A point's queries' (input, output) lengths: the pair, or draws from the trace's pairs.
Pairs query_lengths(const SweepSettings& s, const Pairs& source, std::int64_t n, std::int64_t concurrency) {
  Pairs out;
  if (source.size() == 1) return Pairs(static_cast<std::size_t>(n), source.front());
  std::mt19937_64 draw(s.seed + static_cast<std::uint64_t>(concurrency));
  std::uniform_int_distribution<std::size_t> pick(0, source.size() - 1);
  for (std::int64_t q = 0; q < n; ++q) out.push_back(source[pick(draw)]);
  return out;
}

// One point: `concurrency` queries in flight until `queries` are done (closed loop); `label` names
// its lengths ("1024/256", or the trace's).
json run_point(PagedEngine& engine, models::CausalDecoder& decoder, const torch::Device& device, const SweepSettings& s,
               std::int64_t blocks, const Pairs& source, const std::string& label, std::int64_t concurrency) {
  using Clock = std::chrono::steady_clock;
  engine.restart(concurrency);
  const std::int64_t n = point_queries(s, concurrency);
  const Pairs lengths = query_lengths(s, source, n, concurrency);
  std::vector<std::vector<std::int64_t>> prompts;  // made before the clock starts
  std::int64_t input_total = 0, output_total = 0;
  for (std::int64_t q = 0; q < n; ++q) {
    const auto [input, output] = lengths[static_cast<std::size_t>(q)];
    const auto ids = random_token_ids(1, input, decoder.vocab_size(), s.seed + static_cast<std::uint64_t>(q));
    prompts.emplace_back(ids.data_ptr<std::int64_t>(), ids.data_ptr<std::int64_t>() + input);
    input_total += input, output_total += output;
  }
  {  // one query first, untimed: the kernels' first use
    engine.add(-1, prompts[0], std::min<std::int64_t>(lengths[0].second, 2));
    while (!engine.finished()) engine.step();
    torchrt::synchronize(device);
  }
  std::vector<Clock::time_point> added(static_cast<std::size_t>(n)), first(static_cast<std::size_t>(n)),
      done(static_cast<std::size_t>(n));
  std::int64_t next = 0, finished = 0, in_flight = 0, steps = 0, replayed = 0, most_blocks = 0;
  double host_ms = 0, step_ms = 0, pool_use = 0, decode_ms = 0;
  std::int64_t decode_steps = 0;
  const auto start = Clock::now();
  const double started_unix = unix_now();
  const bool profiled = s.profile_steps > 0 && concurrency == s.max_concurrency;
  std::unique_ptr<torchrt::KernelProfile> profile;
  std::int64_t profile_left = profiled ? s.profile_steps : 0;
  double profile_wall_ms = 0;
  json profile_json;
  while (finished < n) {
    if (profile_left > 0 && !profile && finished >= n / 4) {
      torchrt::synchronize(device);
      try {
        if (device.is_cpu()) throw std::runtime_error("the CPU runs no device kernels to time");
        profile = std::make_unique<torchrt::KernelProfile>();
      } catch (const std::exception& e) {  // the point's figures stand without it
        profile_json = {{"error", e.what()}};
        profile_left = 0;
      }
    }
    while (in_flight < concurrency && next < n) {
      engine.add(next, prompts[static_cast<std::size_t>(next)], lengths[static_cast<std::size_t>(next)].second);
      added[static_cast<std::size_t>(next)] = Clock::now();
      ++next, ++in_flight;
    }
    const auto r = engine.step();
    const auto now = Clock::now();
    if (profile && profile_left > 0) {
      profile_wall_ms += r.step_ms;
      if (--profile_left == 0) {
        torchrt::synchronize(device);
        profile_json = kernels_json(profile->stop(), s.profile_steps, profile_wall_ms);
        profile.reset();
      }
    }
    ++steps;
    replayed += r.replayed ? 1 : 0;
    if (r.tokens == r.sequences) ++decode_steps, decode_ms += r.step_ms;  // every sequence one token
    host_ms += r.host_ms;
    step_ms += r.step_ms;
    const std::int64_t used = engine.scheduler().used_blocks();
    pool_use += static_cast<double>(used);
    most_blocks = std::max(most_blocks, used);
    for (const auto id : r.first_token) first[static_cast<std::size_t>(id)] = now;
    for (const auto id : r.finished) {
      done[static_cast<std::size_t>(id)] = now;
      ++finished, --in_flight;
    }
    if (r.tokens == 0 && finished < n) throw std::runtime_error("the engine stopped with queries left");
  }
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> ttft, tpot, e2e, per_user;
  const auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  for (std::size_t q = 0; q < static_cast<std::size_t>(n); ++q) {
    ttft.push_back(ms(added[q], first[q]));
    e2e.push_back(ms(added[q], done[q]));
    if (const auto output = lengths[q].second; output > 1) {
      const double t = ms(first[q], done[q]) / static_cast<double>(output - 1);
      tpot.push_back(t);
      per_user.push_back(t > 0 ? 1e3 / t : 0);
    }
  }
  double user_mean = 0;
  for (const double u : per_user) user_mean += u;
  if (!per_user.empty()) user_mean /= static_cast<double>(per_user.size());
  const double out_rate = static_cast<double>(output_total) / wall;
  const auto mean_of = [n](std::int64_t total) {
    return static_cast<std::int64_t>(std::llround(static_cast<double>(total) / static_cast<double>(n)));
  };
  json point = {
      {"lengths", label},
      {"input_tokens", mean_of(input_total)},  // a trace's: the means
      {"output_tokens", mean_of(output_total)},
      {"concurrency", concurrency},
      {"queries", n},
      {"seconds", wall},
      {"output_tokens_per_second_per_gpu", out_rate},
      {"input_tokens_per_second_per_gpu", static_cast<double>(input_total) / wall},
      {"output_tokens_total", output_total},
      {"tokens_per_second_per_user", user_mean},
      {"ttft_ms", percentiles_json(ttft)},
      {"tpot_ms", percentiles_json(tpot)},
      {"e2e_ms", percentiles_json(e2e)},
      {"steps", steps},
      {"graph_steps", replayed},  // decode-only steps replayed as device graphs
      {"decode_steps", decode_steps},
      {"mean_decode_step_ms", decode_ms / static_cast<double>(std::max<std::int64_t>(decode_steps, 1))},
      {"host_share_of_step", step_ms > 0 ? host_ms / step_ms : 0.0},
      {"mean_step_ms", step_ms / static_cast<double>(std::max<std::int64_t>(steps, 1))},
      {"pool_use_mean", pool_use / static_cast<double>(std::max<std::int64_t>(steps, 1)) / static_cast<double>(blocks)},
      {"pool_use_max", static_cast<double>(most_blocks) / static_cast<double>(blocks)},
      {"preemptions", engine.scheduler().preemptions()},
      {"started_unix", started_unix},  // the window whose power the report reads from the monitor
      {"ended_unix", unix_now()},
      {"ok", true}};
  if (!profile_json.is_null()) point["profile"] = profile_json;  // its figures carry the profiler's cost
  if (s.gpu_hour_cost > 0) point["cost_per_million_output_tokens"] = s.gpu_hour_cost / 3600.0 / out_rate * 1e6;
  return point;
}

}  // namespace

std::int64_t sweep_pool_blocks(const SweepSettings& s, models::CausalDecoder& decoder, const torch::Device& device,
                               torch::Dtype dtype, std::string& how) {
  const double per_block = block_bytes(s, decoder, dtype);
  const double free = torchrt::free_device_memory_bytes(device);
  if (free > 0) {
    const auto blocks = static_cast<std::int64_t>(std::floor(free * s.kv_cache_memory_fraction / per_block));
    how = fixed_digits(s.kv_cache_memory_fraction, 2) + " of the " + fixed_digits(free / (1 << 30), 1) +
          " GiB free after the weights";
    return blocks;
  }
  // No free-memory figure (the CPU): what the largest point holds at once.
  std::int64_t longest = s.trace.pairs.empty() ? 0 : s.trace.longest();
  for (const auto& [input, output] : s.lengths) longest = std::max(longest, input + output);
  how = "what the largest point holds (" + std::to_string(s.max_concurrency) + " sequences of " +
        std::to_string(longest) + " tokens): the device reports no free memory";
  return s.max_concurrency * ((longest + s.block_size - 1) / s.block_size);
}

json run_serving_sweep(models::CausalDecoder& decoder, const torch::Device& device, torch::Dtype dtype,
                       const SweepSettings& s, std::ostream& progress) {
  std::string how;
  const std::int64_t blocks = sweep_pool_blocks(s, decoder, device, dtype, how);
  const double per_block = block_bytes(s, decoder, dtype);
  Pairs all = s.lengths;
  all.insert(all.end(), s.trace.pairs.begin(), s.trace.pairs.end());
  for (const auto& [input, output] : all)
    if ((input + output - 1 + s.block_size - 1) / s.block_size > blocks)
      throw std::runtime_error("kv_cache_memory_fraction " + fixed_digits(s.kv_cache_memory_fraction, 2) +
                               " gives a pool of " + std::to_string(blocks * s.block_size) + " tokens; a sequence of " +
                               std::to_string(input) + " + " + std::to_string(output) + " tokens needs " +
                               std::to_string(input + output - 1) +
                               ": raise kv_cache_memory_fraction or shorten sweep_lengths");
  serving::SchedulerOptions o;
  o.block_size = s.block_size;
  o.blocks = blocks;
  o.max_num_batched_tokens = s.max_num_batched_tokens;
  o.max_num_seqs = s.max_concurrency;
  DecodeBuckets buckets;
  buckets.enabled = s.decode_graphs && torchrt::device_has_graphs(device.type());
  buckets.max_rows = s.max_concurrency;
  for (const auto& [input, output] : all) buckets.max_length = std::max(buckets.max_length, input + output);
  const auto captured = std::chrono::steady_clock::now();
  PagedEngine engine(decoder, device, dtype, o, buckets);  // one pool and one set of graphs for every point
  const double capture_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - captured).count();
  json out = {
      {"engine", "paged KV cache, continuous batching with chunked prefill (max_num_batched_tokens " +
                     std::to_string(s.max_num_batched_tokens) + "), preemption by recompute; " + engine.describe()},
      {"engine_setup_seconds", capture_s},
      {"pool",
       {{"blocks", blocks},
        {"block_size", s.block_size},
        {"tokens", blocks * s.block_size},
        {"gib", static_cast<double>(blocks) * per_block / (1 << 30)},
        {"sized_by", how}}},
      {"definitions",
       "output tokens/s per GPU: the point's output tokens over its wall time, on one GPU (input tokens "
       "apart); tokens/s per user: 1 / TPOT, the mean over queries; TTFT from a query's arrival (its "
       "place in the closed loop) to its first token"}};
  if (s.gpu_hour_cost > 0)
    out["gpu_hour_cost"] = {{"value", s.gpu_hour_cost}, {"note", "the user's own price of one GPU-hour"}};
  progress << "serving sweep: a pool of " << blocks << " blocks of " << s.block_size << " tokens ("
           << fixed_digits(static_cast<double>(blocks) * per_block / (1 << 30), 2) << " GiB, " << how << "); "
           << engine.describe() << (engine.graphs() > 0 ? " in " + fixed_digits(capture_s, 1) + " s" : "") << "\n";
  json points = json::array();
  std::vector<std::pair<Pairs, std::string>> sources;
  for (const auto& pair : s.lengths)
    sources.push_back({{pair}, std::to_string(pair.first) + "/" + std::to_string(pair.second)});
  if (!s.trace.pairs.empty()) sources.push_back({s.trace.pairs, "trace " + s.trace.source});
  for (const auto& [source, label] : sources) {
    for (const auto c : sweep_concurrencies(s.max_concurrency)) {
      json point;
      try {
        point = run_point(engine, decoder, device, s, blocks, source, label, c);
        progress << "  " << label << " at concurrency " << c << ": "
                 << fixed_digits(point["output_tokens_per_second_per_gpu"], 1) << " output tokens/s, "
                 << fixed_digits(point["tokens_per_second_per_user"], 1) << " tokens/s a user, TTFT p50 "
                 << fixed_digits(point["ttft_ms"]["p50"], 1) << " ms, TPOT p50 "
                 << fixed_digits(point["tpot_ms"]["p50"], 2) << " ms, host "
                 << fixed_digits(100 * point["host_share_of_step"].get<double>(), 1) << " % of the step, "
                 << fixed_digits(point["mean_decode_step_ms"], 2) << " ms a decode-only step ("
                 << point["graph_steps"].get<std::int64_t>() << " of " << point["steps"].get<std::int64_t>()
                 << " steps replayed)\n";
        if (point.contains("profile")) progress << profile_text(point["profile"]);
      } catch (const std::exception& e) {
        // Out of memory, or a length the pool cannot hold: this point fails, the sweep goes on.
        std::string why = e.what();
        why = why.substr(0, why.find('\n'));
        point = {{"lengths", label}, {"concurrency", c}, {"ok", false}, {"error", why}};
        if (source.size() == 1)
          point["input_tokens"] = source.front().first, point["output_tokens"] = source.front().second;
        progress << "  " << label << " at concurrency " << c << ": failed: " << why << "\n";
      }
      points.push_back(point);
    }
  }
  out["points"] = points;
  return out;
}

std::string serving_sweep_table(const json& sweep) {
  std::ostringstream md;
  md << "\n| in / out | concurrency | output tokens/s per GPU | tokens/s per user | TTFT p50 / p90 / p99 (ms) | TPOT "
        "p50 / p90 / p99 (ms) | e2e p50 / p99 (s) | host share | preemptions | cost per M output tokens |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  const auto three = [](const json& p, int digits) {
    return fixed_digits(p["p50"], digits) + " / " + fixed_digits(p["p90"], digits) + " / " +
           fixed_digits(p["p99"], digits);
  };
  for (const auto& p : sweep.value("points", json::array())) {
    md << "| " << p.value("lengths", std::string()) << " | " << p["concurrency"].get<std::int64_t>() << " | ";
    if (!p.value("ok", false)) {
      md << "failed: " << p.value("error", std::string()) << " | | | | | | | |\n";
      continue;
    }
    md << fixed_digits(p["output_tokens_per_second_per_gpu"], 1) << " | "
       << fixed_digits(p["tokens_per_second_per_user"], 1) << " | " << three(p["ttft_ms"], 1) << " | "
       << three(p["tpot_ms"], 2) << " | " << fixed_digits(p["e2e_ms"]["p50"].get<double>() / 1e3, 2) << " / "
       << fixed_digits(p["e2e_ms"]["p99"].get<double>() / 1e3, 2) << " | "
       << fixed_digits(100 * p["host_share_of_step"].get<double>(), 1) << " % | "
       << p["preemptions"].get<std::int64_t>() << " | "
       << (p.contains("cost_per_million_output_tokens") ? fixed_digits(p["cost_per_million_output_tokens"], 3) : "–")
       << " |\n";
  }
  if (sweep.contains("gpu_hour_cost"))
    md << "\nCost per million output tokens from gpu_hour_cost " << fixed_digits(sweep["gpu_hour_cost"]["value"], 2)
       << ": the user's own figure, not a market price.\n";
  return md.str();
}

}  // namespace xpuperf::infer
