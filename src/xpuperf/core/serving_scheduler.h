#pragma once
// The scheduler of a paged-KV serving engine (vLLM's): which sequences run which of their tokens in
// the next forward step. Torch-free: it counts tokens and cache blocks; the engine holds the ids.
//
// The KV cache is one pool of blocks of `block_size` tokens; a sequence holds the blocks its
// computed tokens need, in order (its block table). Each step spends at most
// `max_num_batched_tokens` tokens:
//   1. the running sequences first, oldest first: a decoding one its last token, a prefilling one
//      the next chunk of its prompt (chunked prefill). When the pool has no block for one, the
//      newest running sequence is preempted: its blocks are freed and it goes back to the front of
//      the queue, to be computed again from its prompt and the tokens it generated (recompute);
//   2. then waiting sequences, in arrival order, while the budget, `max_num_seqs` and the pool's
//      free blocks allow (a new sequence never preempts a running one).
// A sequence whose step reaches the last token it knows samples its next token.

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

namespace xpuperf::serving {

struct SchedulerOptions {
  std::int64_t block_size = 16;                // tokens a block
  std::int64_t blocks = 0;                     // the pool
  std::int64_t max_num_batched_tokens = 8192;  // tokens a step: decode tokens and prefill chunks
  std::int64_t max_num_seqs = 256;             // sequences running at once
};

// What one step runs of one sequence: its tokens [start, start + count) (positions), and whether
// the step samples its next token (the chunk reaches the last token it knows).
struct StepItem {
  std::int64_t id = 0;
  std::int64_t start = 0, count = 0;
  bool samples = false;
};

struct StepPlan {
  std::vector<StepItem> items;          // decode and chunks of running sequences first
  std::vector<std::int64_t> preempted;  // sent back to the queue by this step (recompute)
  std::int64_t tokens() const;          // Σ count
  bool empty() const { return items.empty(); }
};

class Scheduler {
 public:
  // Throws std::invalid_argument naming the option when one is not positive.
  explicit Scheduler(SchedulerOptions options);

  // A sequence of `prompt_tokens` that will generate `output_tokens`. Throws std::invalid_argument
  // when its longest length needs more blocks than the pool has (it could never run), or the id
  // is taken.
  void add(std::int64_t id, std::int64_t prompt_tokens, std::int64_t output_tokens);

  // The next step; empty when nothing is left to run.
  StepPlan next_step();
  // The step ran: its tokens are computed, and each sampling item generated one token. Returns the
  // ids that finished (their blocks are freed).
  std::vector<std::int64_t> step_done(const StepPlan& plan);

  // A sequence's block table (the blocks of its computed tokens and of the step planned for it).
  const std::vector<std::int64_t>& blocks_of(std::int64_t id) const;
  std::int64_t generated(std::int64_t id) const;
  bool finished() const { return running_.empty() && waiting_.empty(); }
  std::int64_t free_blocks() const { return static_cast<std::int64_t>(free_.size()); }
  std::int64_t used_blocks() const { return options_.blocks - free_blocks(); }
  std::int64_t running() const { return static_cast<std::int64_t>(running_.size()); }
  std::int64_t waiting() const { return static_cast<std::int64_t>(waiting_.size()); }
  std::int64_t preemptions() const { return preemptions_; }
  const SchedulerOptions& options() const { return options_; }

 private:
  struct Sequence {
    std::int64_t prompt = 0, output = 0;
    std::int64_t known = 0;     // tokens whose ids exist: the prompt and those generated
    std::int64_t computed = 0;  // tokens whose keys and values are in the cache
    std::int64_t generated = 0;
    std::vector<std::int64_t> blocks;
  };
  std::int64_t blocks_for(std::int64_t tokens) const;
  // Gives `s` the blocks for its first `tokens`; false (nothing taken) when the pool lacks them.
  bool grow(Sequence& s, std::int64_t tokens);
  void release(Sequence& s);
  void preempt(std::int64_t id);

  SchedulerOptions options_;
  std::map<std::int64_t, Sequence> sequences_;
  std::vector<std::int64_t> running_;  // oldest first
  std::deque<std::int64_t> waiting_;
  std::vector<std::int64_t> free_;  // a stack of free block ids
  std::int64_t preemptions_ = 0;
};

}  // namespace xpuperf::serving
