#pragma once
// The paged serving engine: sequences join and leave at any step (continuous batching), their keys
// and values in a paged KV cache (models/paged_kv.h), each step mixing decode tokens with chunks of
// prompts under a token budget (core/serving_scheduler.h, vLLM's scheduler), preempting by
// recompute when the cache's pool runs out. Greedy: the same tokens as generating each sequence
// alone.

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <vector>

#include "xpuperf/core/serving_scheduler.h"
#include "xpuperf/models/kv_cache.h"
#include "xpuperf/models/paged_kv.h"

namespace xpuperf::infer {

class PagedEngine {
 public:
  // The pool's blocks are `options.blocks` of `options.block_size` tokens.
  PagedEngine(models::CausalDecoder& decoder, torch::Device device, torch::Dtype dtype,
              serving::SchedulerOptions options);

  // A sequence to generate `output_tokens` after its prompt (token ids). Throws
  // std::invalid_argument when it can never run (longer than the model's context or the pool).
  void add(std::int64_t id, const std::vector<std::int64_t>& prompt, std::int64_t output_tokens);

  struct StepResult {
    std::int64_t tokens = 0;                // the step's tokens (decode tokens and prefill chunks)
    std::int64_t sequences = 0;             // sequences in the step
    std::int64_t sampled = 0;               // of them, those that gave a token
    std::vector<std::int64_t> finished;     // ids done after it
    std::vector<std::int64_t> first_token;  // ids whose first output token it gave
    std::vector<std::int64_t> preempted;
    // The host's time to schedule the step and build its inputs, and the whole step's (the forward
    // and the picked tokens' copy to the host wait for the device).
    double host_ms = 0, step_ms = 0;
  };
  // One forward step; an empty result (no tokens) when nothing is left.
  StepResult step();
  bool finished() const { return scheduler_.finished(); }

  // The tokens a sequence generated so far.
  std::vector<std::int64_t> output(std::int64_t id) const;
  const serving::Scheduler& scheduler() const { return scheduler_; }
  const models::PagedKvCache& cache() const { return cache_; }

 private:
  models::CausalDecoder& decoder_;
  torch::Device device_;
  serving::Scheduler scheduler_;
  models::PagedKvCache cache_;
  struct Tokens {
    std::vector<std::int64_t> ids;  // the prompt, then the output
    std::int64_t prompt = 0;
  };
  std::map<std::int64_t, Tokens> tokens_;
};

}  // namespace xpuperf::infer
