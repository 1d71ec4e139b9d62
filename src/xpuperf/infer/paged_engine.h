#pragma once
// The paged serving engine: sequences join and leave at any step (continuous batching), their keys
// and values in a paged KV cache (models/paged_kv.h), each step mixing decode tokens with chunks of
// prompts under a token budget (core/serving_scheduler.h, vLLM's scheduler), preempting by
// recompute when the cache's pool runs out. Greedy: the same tokens as generating each sequence
// alone.

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "xpuperf/core/serving_scheduler.h"
#include "xpuperf/models/kv_cache.h"
#include "xpuperf/models/paged_kv.h"

namespace xpuperf::infer {

// Decode-only steps (every sequence of the step decoding one token) through fixed-shape buffers:
// the rows padded up to a bucket (1, 2, 4, 8, 16, 32, then multiples of 32) and the keys a row may
// see up to one (256 × 2^k tokens, and the longest sequence). Padded rows write and read a scratch
// block of the pool that no sequence holds. Where the device's vendor brings graphs (NVIDIA's CUDA
// graphs), each bucket's step is captured once, up front, and a step is one replay: the host's
// cost of a step no longer grows with the model's layers.
struct DecodeBuckets {
  bool enabled = false;
  bool graphs = true;           // capture them where the device has graphs
  std::int64_t max_rows = 0;    // the largest bucket; 0: the scheduler's max_num_seqs
  std::int64_t max_length = 0;  // the longest sequence served (prompt + output); 0: the model's positions
};

// The row buckets of decode-only steps up to `max_rows`, and the visible-key buckets up to
// `max_length` (multiples of `block_size`).
std::vector<std::int64_t> decode_row_buckets(std::int64_t max_rows);
std::vector<std::int64_t> decode_visible_buckets(std::int64_t max_length, std::int64_t block_size);

class PagedEngine {
 public:
  // The pool's blocks are `options.blocks` of `options.block_size` tokens (and one scratch block).
  // With buckets on a device with graphs, every bucket's graph is captured here.
  PagedEngine(models::CausalDecoder& decoder, torch::Device device, torch::Dtype dtype,
              serving::SchedulerOptions options, DecodeBuckets buckets = {});
  ~PagedEngine();

  // Starts again with nothing in flight (sequences left are dropped) and at most `max_num_seqs`
  // sequences at once; the pool and the captured graphs are kept.
  void restart(std::int64_t max_num_seqs);

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
    // The host's time to schedule the step, build its inputs and issue its work to the device (a
    // graph's replay, or each operator's launch), and the whole step's (until its tokens are on the
    // host). A step whose host time nears its whole time is bound by the host.
    double host_ms = 0, step_ms = 0;
    bool bucketed = false;  // a decode-only step through a bucket's fixed shapes
    bool replayed = false;  // ... as its captured graph
  };
  // One forward step; an empty result (no tokens) when nothing is left.
  StepResult step();
  bool finished() const { return scheduler_.finished(); }

  // The tokens a sequence generated so far.
  std::vector<std::int64_t> output(std::int64_t id) const;
  const serving::Scheduler& scheduler() const { return scheduler_; }
  const models::PagedKvCache& cache() const { return cache_; }
  // How decode-only steps run, for the report.
  std::string describe() const;
  std::int64_t graphs() const;

 private:
  struct Bucket;
  // Each fills the step's inputs and issues its work to the device, calls `issued` (the host's part
  // done), then waits for the picked tokens on the host: the bucket's a token each item, the
  // general step's a token each sampling item.
  torch::Tensor bucketed_inputs_and_run(const serving::StepPlan& plan, Bucket& bucket,
                                        const std::function<void()>& issued);
  torch::Tensor general_inputs_and_run(const serving::StepPlan& plan, const std::function<void()>& issued);
  // The bucket of a decode-only plan; null when the plan prefills or no bucket holds it.
  Bucket* bucket_for(const serving::StepPlan& plan);
  torch::Tensor run_bucket(Bucket& bucket);
  // Every row of the bucket's inputs at `host` a padded one: token 0 at position 0 of the scratch block.
  void pad_rows(const Bucket& bucket, std::int64_t* host) const;
  void prepare_buckets();

  models::CausalDecoder& decoder_;
  torch::Device device_;
  serving::Scheduler scheduler_;
  models::PagedKvCache cache_;
  DecodeBuckets buckets_options_;
  std::int64_t scratch_block_ = 0;  // the pool's last block: what padded rows write and read
  std::map<std::pair<std::int64_t, std::int64_t>, std::unique_ptr<Bucket>> buckets_;  // (rows, visible)
  std::vector<std::int64_t> row_buckets_, visible_buckets_;
  torch::Tensor staging_;  // host (pinned where the device has it): a bucket's inputs before their copy
  struct Tokens {
    std::vector<std::int64_t> ids;  // the prompt, then the output
    std::int64_t prompt = 0;
  };
  std::map<std::int64_t, Tokens> tokens_;
};

}  // namespace xpuperf::infer
