#pragma once
// The serving sweep (InferenceMAX's frontier): for each input/output length pair, the paged engine
// (paged_engine.h) at concurrency 1, 2, 4, ... up to max_concurrency, each point a closed loop that
// keeps that many queries in flight until its queries are done. Each point: TTFT, TPOT and
// end-to-end latency at p50 / p90 / p99, output tokens/s per GPU (input tokens counted apart),
// tokens/s per user, the host's share of the steps, the pool's use and preemptions, and the cost
// per million output tokens from the user's own GPU-hour price. A point that fails (out of memory)
// is reported as failed with its reason, and the sweep goes on.

#include <torch/torch.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "xpuperf/core/load_generator.h"
#include "xpuperf/core/serving_scheduler.h"
#include "xpuperf/models/kv_cache.h"

namespace xpuperf::infer {

struct SweepSettings {
  std::vector<std::pair<std::int64_t, std::int64_t>> lengths;  // (input tokens, output tokens)
  // A trace's (input, output) pairs (lengths_file): also swept, each query's pair drawn from them
  // with replacement; none when empty.
  loadgen::Lengths trace;
  std::int64_t max_concurrency = 64;
  std::int64_t queries = 0;  // a point's queries; 0: twice its concurrency, at least 4
  std::int64_t block_size = 16;
  std::int64_t max_num_batched_tokens = 8192;
  // The pool: this share of the device memory free after the weights (CUDA); on another device
  // (the CPU) the blocks the largest point needs.
  double kv_cache_memory_fraction = 0.9;
  double gpu_hour_cost = 0;  // the user's price of one GPU-hour; 0: no cost figure
  // Decode-only steps as device graphs, one per row and visible-key bucket (paged_engine.h), where
  // the device's vendor brings graphs.
  bool decode_graphs = true;
  // > 0: this many steps of each length pair's highest-concurrency point, from when a quarter of its
  // queries are done, with each device kernel timed (where a step's time goes). The point's figures
  // then carry the profiler's cost, and say so.
  std::int64_t profile_steps = 0;
  std::uint64_t seed = 1234;
};

// Concurrency 1, 2, 4, ... up to `max` (and `max` itself when it is not a power of two).
std::vector<std::int64_t> sweep_concurrencies(std::int64_t max);

// The pool's blocks for these settings on this device: what kv_cache_memory_fraction leaves, or
// what the largest point needs; its bytes and how it was sized go to `how`.
std::int64_t sweep_pool_blocks(const SweepSettings& s, models::CausalDecoder& decoder, const torch::Device& device,
                               torch::Dtype dtype, std::string& how);

// Runs the sweep; progress a line a point. {engine, pool, points: [...]}.
nlohmann::json run_serving_sweep(models::CausalDecoder& decoder, const torch::Device& device, torch::Dtype dtype,
                                 const SweepSettings& s, std::ostream& progress);

// The points as a Markdown table.
std::string serving_sweep_table(const nlohmann::json& sweep);

}  // namespace xpuperf::infer
