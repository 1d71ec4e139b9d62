#include "xpuperf/infer/generation.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <iomanip>
#include <numeric>
#include <sstream>

#include "xpuperf/core/files.h"
#include "xpuperf/core/strings.h"
#include "xpuperf/infer/op_profile.h"
#include "xpuperf/torchrt/device.h"

namespace xpuperf::infer {

using nlohmann::json;

namespace {

// Serves LoadGen's queries on the engine, each step synchronised so that its time is true.
class EngineBackend : public loadgen::Backend {
 public:
  EngineBackend(DecoderEngine& engine, std::int64_t slots, const torch::Device& device,
                const std::vector<loadgen::Query>& queries, std::int64_t vocab, std::uint64_t seed)
      : engine_(engine), slots_(slots), device_(device) {
    for (std::size_t i = 0; i < queries.size(); ++i)  // made before the clock starts
      prompts_.push_back(random_token_ids(1, queries[i].prompt_tokens, vocab, seed + i));
  }
  std::int64_t slots() const override { return slots_; }
  void prefill(std::int64_t slot, const loadgen::Query&, std::size_t index) override {
    engine_.prefill(slot, prompts_[index]);
    torchrt::synchronize(device_);
  }
  void decode(const std::vector<std::int64_t>& busy) override {
    engine_.decode(busy);
    torchrt::synchronize(device_);
  }

 private:
  DecoderEngine& engine_;
  std::int64_t slots_;
  torch::Device device_;
  std::vector<torch::Tensor> prompts_;
};

loadgen::ScenarioResult run_scenario(DecoderEngine& engine, const GenerationSettings& s, const torch::Device& device,
                                     std::int64_t vocab, const std::string& scenario, double rate) {
  const auto queries = scenario == "Offline" ? loadgen::offline_queries(s.offline_queries, s.lengths, s.seed)
                                             : loadgen::server_queries(rate, s.rules, s.lengths, s.seed);
  EngineBackend backend(engine, s.decoder.slots, device, queries, vocab, s.seed);
  const auto timings = loadgen::serve(queries, backend, loadgen::Clock::steady());
  return loadgen::summarise(scenario, rate, queries, timings, s.rules);
}

}  // namespace

torch::Tensor random_token_ids(std::int64_t rows, std::int64_t tokens, std::int64_t vocab, std::uint64_t seed) {
  auto generator = at::detail::createCPUGenerator(seed);
  return torch::randint(0, vocab, {rows, tokens}, generator, torch::kLong);
}

double measure_copy_bandwidth(const torch::Device& device) {
  const std::int64_t bytes = device.is_cuda() ? (std::int64_t{1} << 30) : (std::int64_t{64} << 20);
  const auto options = torch::TensorOptions().device(device).dtype(torch::kByte);
  auto from = torch::ones({bytes}, options), to = torch::empty({bytes}, options);
  to.copy_(from);
  torchrt::synchronize(device);
  const int copies = 10;
  const double t0 = steady_seconds();
  for (int i = 0; i < copies; ++i) to.copy_(from);
  torchrt::synchronize(device);
  return 2.0 * static_cast<double>(bytes) * copies / (steady_seconds() - t0);
}

namespace {

// Slots 0 .. n - 1: a decode batch of n prompts prefilled from slot 0.
std::vector<std::int64_t> first_slots(std::int64_t n) {
  std::vector<std::int64_t> slots(static_cast<std::size_t>(n));
  std::iota(slots.begin(), slots.end(), 0);
  return slots;
}

// Where a decode step's time goes: `s.profile_steps` steps at the first decode batch size through
// an engine of its own without CUDA graphs (a replay runs no ATen operator), so every operator shows.
json profile_decode(const std::shared_ptr<torch::nn::Module>& module, models::CausalDecoder& decoder,
                    torch::Device device, torch::Dtype dtype, const GenerationSettings& s, std::ostream& progress) {
  DecoderOptions options = s.decoder;
  options.slots = s.decode_batch_sizes.front();
  options.cuda_graphs = false;
  DecoderEngine engine(module, decoder, device, dtype, options);
  const auto prompts = random_token_ids(options.slots, s.decode_prompt_tokens, decoder.vocab_size(), s.seed);
  const std::vector<std::int64_t> busy = first_slots(options.slots);
  engine.prefill(0, prompts);
  engine.decode(busy);  // warm, so first-call work is not counted
  torchrt::synchronize(device);
  // Each step adds a position: the steps stay inside the sequence's room.
  const std::int64_t steps = std::min(s.profile_steps, options.max_tokens - s.decode_prompt_tokens - 1);
  const std::vector<OpTime> ops = profile_ops(
      [&] {
        for (std::int64_t i = 0; i < steps; ++i) engine.decode(busy);
      },
      device);
  progress << "\nATen operators of " << steps << " decode step(s) of batch " << options.slots
           << " without device graphs (self time: less the operators each calls):\n"
           << op_profile_table(ops, 15);
  return {{"steps", steps},
          {"batch_size", options.slots},
          {"timing", op_profile_timing(device)},
          {"operators", op_profile_json(ops, 30)}};
}

}  // namespace

namespace {

// One row of the decode table: `batch` sequences of the prompt length, greedy or sampled, timed
// against the bandwidth bound (the weights once a step, each sequence's cache at its mean length).
json time_decode(DecoderEngine& engine, const GenerationSettings& s, const torch::Device& device, std::int64_t batch,
                 bool sampled, std::int64_t vocab, double kv_per_position, double bandwidth) {
  engine.set_sampling(sampled ? s.temperature : 0.0, sampled ? s.top_k : 0);
  const auto prompts = random_token_ids(batch, s.decode_prompt_tokens, vocab, s.seed);
  const std::vector<std::int64_t> busy = first_slots(batch);
  engine.prefill(0, prompts);  // untimed: the kernels' first use
  engine.decode(busy);
  torchrt::synchronize(device);
  const double start = steady_seconds();
  engine.prefill(0, prompts);
  torchrt::synchronize(device);
  const double first = steady_seconds();
  const std::int64_t steps = s.decode_output_tokens - 1;
  for (std::int64_t i = 0; i < steps; ++i) engine.decode(busy);
  torchrt::synchronize(device);
  const double end = steady_seconds();
  const double tpot = steps > 0 ? (end - first) / static_cast<double>(steps) : 0;
  const double mean_context = static_cast<double>(s.decode_prompt_tokens) + static_cast<double>(steps) / 2.0;
  const double bytes = s.weight_bytes_per_step + static_cast<double>(batch) * mean_context * kv_per_position;
  json row = {
      {"batch_size", batch},
      {"sampling", sampled ? "temperature " + fixed_digits(s.temperature, 2) + ", top-k " + std::to_string(s.top_k)
                           : std::string("greedy")},
      {"prompt_tokens", s.decode_prompt_tokens},
      {"output_tokens", s.decode_output_tokens},
      {"ttft_ms", (first - start) * 1e3},
      {"tpot_ms", tpot * 1e3},
      {"output_tokens_per_second", tpot > 0 ? static_cast<double>(batch) / tpot : 0.0},
      {"bytes_per_step", bytes},
      {"bandwidth_bound_ms", bytes / bandwidth * 1e3}};
  if (tpot > 0) row["tpot_over_bound"] = tpot / (bytes / bandwidth);
  return row;
}

// LoadGen's Offline scenario, then Server at each share of Offline's rate (server_load).
void run_load_scenarios(DecoderEngine& engine, const GenerationSettings& s, const torch::Device& device,
                        std::int64_t vocab, json& out, std::ostream& progress) {
  const auto offline = run_scenario(engine, s, device, vocab, "Offline", 0);
  out["offline"] = loadgen::to_json(offline);
  progress << "Offline: " << offline.queries << " queries, " << fixed_digits(offline.queries_per_second, 3)
           << " queries/s, " << fixed_digits(offline.output_tokens_per_second, 1) << " output tokens/s"
           << (offline.valid ? "" : " (not valid: " + offline.reasons.front() + ")") << "\n";
  std::vector<loadgen::ScenarioResult> server;
  json runs = json::array();
  for (const double share : s.server_load) {
    const double rate = share * offline.queries_per_second;
    server.push_back(run_scenario(engine, s, device, vocab, "Server", rate));
    const auto& r = server.back();
    json j = loadgen::to_json(r);
    j["load"] = share;
    runs.push_back(j);
    progress << "Server at " << fixed_digits(rate, 3) << " queries/s (" << fixed_digits(100 * share, 0)
             << " % of Offline): TTFT p99 " << fixed_digits(r.ttft_ms.p99, 1) << " ms, TPOT p99 "
             << fixed_digits(r.tpot_ms.p99, 2) << " ms" << (r.valid ? ", valid" : ", not valid: " + r.reasons.front())
             << "\n";
  }
  out["server"] = runs;
  out["server_max_rate_within_bounds"] = loadgen::highest_rate_within_bounds(server);
}

}  // namespace

// The contiguous engine's decode runs and LoadGen's scenarios.
static json run_contiguous(std::shared_ptr<torch::nn::Module> module, models::CausalDecoder& decoder,
                           torch::Device device, torch::Dtype dtype, const GenerationSettings& s,
                           std::ostream& progress);

json run_generation(std::shared_ptr<torch::nn::Module> module, models::CausalDecoder& decoder, torch::Device device,
                    torch::Dtype dtype, const GenerationSettings& s, std::ostream& progress) {
  json out = run_contiguous(module, decoder, device, dtype, s, progress);
  if (!s.sweep.lengths.empty()) {
    try {
      out["sweep"] = run_serving_sweep(decoder, device, dtype, s.sweep, progress);
    } catch (const std::exception& e) {  // what was measured above stays
      out["sweep"] = {{"error", e.what()}};
      progress << "serving sweep: " << e.what() << "\n";
    }
  }
  return out;
}

static json run_contiguous(std::shared_ptr<torch::nn::Module> module, models::CausalDecoder& decoder,
                           torch::Device device, torch::Dtype dtype, const GenerationSettings& s,
                           std::ostream& progress) {
  DecoderEngine engine(module, decoder, device, dtype, s.decoder);
  const double t0 = steady_seconds();
  engine.capture_all();
  json out = {{"engine", engine.describe()}, {"capture_time", steady_seconds() - t0}};
  // Said as it ends, so that a run stopped later shows how far the generation step got.
  progress << "decode engine ready in " << fixed_digits(out["capture_time"], 1) << " s: " << engine.describe() << "\n";
  const double bandwidth = measure_copy_bandwidth(device);
  out["copy_bandwidth_gb_per_s"] = bandwidth / 1e9;
  const std::int64_t vocab = decoder.vocab_size();
  const double element = static_cast<double>(torch::elementSize(dtype));
  // The keys and values a decode step reads a sequence and a cached position.
  const double kv_per_position =
      2.0 * static_cast<double>(decoder.decoder_layers() * decoder.kv_heads() * decoder.head_dim()) * element;

  json decode = json::array();
  for (const std::int64_t batch : s.decode_batch_sizes) {
    for (const bool sampled : {false, true}) {
      json row = time_decode(engine, s, device, batch, sampled, vocab, kv_per_position, bandwidth);
      progress << "decode: batch " << batch << ", " << row["sampling"].get<std::string>() << ": TTFT "
               << fixed_digits(row["ttft_ms"], 2) << " ms, TPOT " << fixed_digits(row["tpot_ms"], 3) << " ms (bound "
               << fixed_digits(row["bandwidth_bound_ms"], 3) << " ms)\n";
      decode.push_back(row);
    }
  }
  out["decode"] = decode;
  engine.set_sampling(0.0, 0);
  if (s.profile_steps > 0 && !s.decode_batch_sizes.empty())
    out["decode_op_profile"] = profile_decode(module, decoder, device, dtype, s, progress);

  out["rules"] = {{"min_duration_s", s.rules.min_duration_s}, {"min_queries", s.rules.min_queries},
                  {"ttft_bound_ms", s.rules.ttft_bound_ms},   {"tpot_bound_ms", s.rules.tpot_bound_ms},
                  {"lengths", s.lengths.describe()},          {"slots", s.decoder.slots}};
  if (s.lengths.pairs.empty()) {
    out["rules"]["prompt_tokens"] = {s.lengths.prompt.min, s.lengths.prompt.max};
    out["rules"]["output_tokens"] = {s.lengths.output.min, s.lengths.output.max};
  }
  if (s.offline_queries > 0) run_load_scenarios(engine, s, device, vocab, out, progress);
  return out;
}

std::string generation_tables(const json& g) {
  std::ostringstream md;
  if (g.contains("decode") && !g["decode"].empty()) {
    md << "\n| decode batch | sampling | TTFT (ms) | TPOT (ms) | output tokens/s | bandwidth bound (ms) | TPOT / bound "
          "|\n"
       << "| ---: | --- | ---: | ---: | ---: | ---: | ---: |\n";
    for (const auto& d : g["decode"])
      md << "| " << d["batch_size"].get<std::int64_t>() << " | " << d["sampling"].get<std::string>() << " | "
         << fixed_digits(d["ttft_ms"], 2) << " | " << fixed_digits(d["tpot_ms"], 3) << " | "
         << fixed_digits(d["output_tokens_per_second"], 1) << " | " << fixed_digits(d["bandwidth_bound_ms"], 3) << " | "
         << fixed_digits(d.value("tpot_over_bound", 0.0), 2) << " |\n";
  }
  const auto scenario_row = [&md](const json& r) {
    md << "| " << r["scenario"].get<std::string>() << " | "
       << (r.contains("target_rate") ? fixed_digits(r["target_rate"], 3) : std::string("all at once")) << " | "
       << r["queries"].get<std::int64_t>() << " | " << fixed_digits(r["queries_per_second"], 3) << " | "
       << fixed_digits(r["output_tokens_per_second"], 1) << " | " << fixed_digits(r["ttft_ms"]["p50"], 1) << " / "
       << fixed_digits(r["ttft_ms"]["p90"], 1) << " / " << fixed_digits(r["ttft_ms"]["p99"], 1) << " | "
       << fixed_digits(r["tpot_ms"]["p50"], 2) << " / " << fixed_digits(r["tpot_ms"]["p90"], 2) << " / "
       << fixed_digits(r["tpot_ms"]["p99"], 2) << " | ";
    if (r["valid"].get<bool>()) {
      md << "valid";
    } else {
      std::string why;
      for (const auto& reason : r["invalid_because"]) why += (why.empty() ? "" : "; ") + reason.get<std::string>();
      md << "not valid: " << why;
    }
    md << " |\n";
  };
  if (g.contains("offline")) {
    md << "\n| scenario | target queries/s | queries | queries/s | output tokens/s | TTFT p50 / p90 / p99 (ms) | TPOT "
          "p50 "
          "/ p90 / p99 (ms) | LoadGen's rules |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n";
    scenario_row(g["offline"]);
    for (const auto& r : g.value("server", json::array())) scenario_row(r);
    md << "\nhighest Server rate within the bounds (TTFT p99 <= " << fixed_digits(g["rules"]["ttft_bound_ms"], 0)
       << " ms, TPOT p99 <= " << fixed_digits(g["rules"]["tpot_bound_ms"], 0)
       << " ms): " << fixed_digits(g.value("server_max_rate_within_bounds", 0.0), 3) << " queries/s\n";
    if (g["rules"].contains("weaker_than_loadgen"))
      md << "\nNOTE: " << g["rules"]["weaker_than_loadgen"].get<std::string>() << "\n";
  }
  if (g.contains("sweep") && g["sweep"].contains("points")) md << serving_sweep_table(g["sweep"]);
  return md.str();
}

}  // namespace xpuperf::infer
