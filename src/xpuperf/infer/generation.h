#pragma once
// What a language model does when it generates, measured on a DecoderEngine: decoding at fixed
// batch sizes (time to first token, time per output token, output tokens/s, against the memory
// bandwidth bound), and serving MLPerf LoadGen's Offline and Server scenarios with continuous
// batching (core/load_generator.h). Prompts are random token ids.

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "xpuperf/core/load_generator.h"
#include "xpuperf/infer/decoder_engine.h"
#include "xpuperf/infer/serving_sweep.h"

namespace xpuperf::infer {

struct GenerationSettings {
  DecoderOptions decoder;  // slots, cached tokens, buckets, CUDA graphs
  std::vector<std::int64_t> decode_batch_sizes;
  std::int64_t decode_prompt_tokens = 128, decode_output_tokens = 64;
  double temperature = 0.8;  // the sampled run (the greedy one has none)
  std::int64_t top_k = 50;
  loadgen::Lengths lengths;          // of the serving queries
  std::int64_t offline_queries = 0;  // 0: no serving scenarios
  std::vector<double> server_load;   // Server rates as shares of the Offline query rate
  loadgen::Rules rules;
  std::uint64_t seed = 1234;
  double weight_bytes_per_step = 0;  // the weights a decode step reads
  std::int64_t profile_steps = 0;    // > 0: this many decode steps with every ATen operator timed
  SweepSettings sweep;               // the paged engine's serving sweep; no lengths: none
};

// Runs the decode runs and the scenarios, printing one line a run to `progress`; the figures:
// {engine, copy_bandwidth_gb_per_s, decode: [...], decode_op_profile (with profile_steps), offline,
// server: [...], server_max_rate_within_bounds, rules, sweep (serving_sweep.h)}. The sweep runs after
// the contiguous engine is gone, so that its pool has that engine's memory too.
nlohmann::json run_generation(std::shared_ptr<torch::nn::Module> module, models::CausalDecoder& decoder,
                              torch::Device device, torch::Dtype dtype, const GenerationSettings& settings,
                              std::ostream& progress);

// The figures as Markdown tables (decode, then the scenarios).
std::string generation_tables(const nlohmann::json& generation);

// Random token ids (rows, tokens) below `vocab` on the CPU, the same for the same seed.
torch::Tensor random_token_ids(std::int64_t rows, std::int64_t tokens, std::int64_t vocab, std::uint64_t seed);

// Device memory bandwidth measured as a copy: bytes read + written per second.
double measure_copy_bandwidth(const torch::Device& device);

}  // namespace xpuperf::infer
