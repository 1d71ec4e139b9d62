#include "xpuperf/core/serving_scheduler.h"

#include <algorithm>
#include <stdexcept>

namespace xpuperf::serving {

std::int64_t StepPlan::tokens() const {
  std::int64_t n = 0;
  for (const auto& item : items) n += item.count;
  return n;
}

Scheduler::Scheduler(SchedulerOptions options) : options_(options) {
  const auto positive = [](std::int64_t value, const char* name) {
    if (value < 1) throw std::invalid_argument(std::string(name) + " must be 1 or more, got " + std::to_string(value));
  };
  positive(options_.block_size, "block_size");
  positive(options_.blocks, "the KV cache's blocks");
  positive(options_.max_num_batched_tokens, "max_num_batched_tokens");
  positive(options_.max_num_seqs, "max_num_seqs");
  // Block 0 is handed out last: taken from the back of the stack.
  for (std::int64_t b = options_.blocks - 1; b >= 0; --b) free_.push_back(b);
}

std::int64_t Scheduler::blocks_for(std::int64_t tokens) const {
  return (tokens + options_.block_size - 1) / options_.block_size;
}

void Scheduler::add(std::int64_t id, std::int64_t prompt_tokens, std::int64_t output_tokens) {
  if (prompt_tokens < 1 || output_tokens < 1)
    throw std::invalid_argument("sequence " + std::to_string(id) + ": a prompt and an output of 1 token or more");
  if (sequences_.count(id)) throw std::invalid_argument("sequence " + std::to_string(id) + " was added already");
  // Its keys and values: every token but the last generated one, which no step computes.
  const std::int64_t longest = prompt_tokens + output_tokens - 1;
  if (blocks_for(longest) > options_.blocks)
    throw std::invalid_argument("a sequence of " + std::to_string(prompt_tokens) + " + " +
                                std::to_string(output_tokens) + " tokens needs " + std::to_string(blocks_for(longest)) +
                                " blocks of " + std::to_string(options_.block_size) +
                                " tokens; the KV cache's pool has " + std::to_string(options_.blocks) +
                                " (raise kv_cache_memory_fraction, or shorten the lengths)");
  Sequence s;
  s.prompt = prompt_tokens;
  s.output = output_tokens;
  s.known = prompt_tokens;
  sequences_.emplace(id, std::move(s));
  waiting_.push_back(id);
}

bool Scheduler::grow(Sequence& s, std::int64_t tokens) {
  const std::int64_t more = blocks_for(tokens) - static_cast<std::int64_t>(s.blocks.size());
  if (more <= 0) return true;
  if (more > free_blocks()) return false;
  for (std::int64_t i = 0; i < more; ++i) {
    s.blocks.push_back(free_.back());
    free_.pop_back();
  }
  return true;
}

void Scheduler::release(Sequence& s) {
  for (auto it = s.blocks.rbegin(); it != s.blocks.rend(); ++it) free_.push_back(*it);
  s.blocks.clear();
}

void Scheduler::preempt(std::int64_t id) {
  Sequence& s = sequences_.at(id);
  release(s);
  s.computed = 0;  // recomputed from its prompt and the tokens it generated
  running_.erase(std::find(running_.begin(), running_.end(), id));
  waiting_.push_front(id);
  ++preemptions_;
}

StepPlan Scheduler::next_step() {
  StepPlan plan;
  std::int64_t budget = options_.max_num_batched_tokens;
  // The running sequences, oldest first; a preemption takes the newest, which may be this one.
  for (std::size_t i = 0; i < running_.size() && budget > 0;) {
    const std::int64_t id = running_[i];
    Sequence& s = sequences_.at(id);
    const std::int64_t count = std::min(s.known - s.computed, budget);
    bool placed = grow(s, s.computed + count);
    while (!placed && running_.back() != id) {
      plan.preempted.push_back(running_.back());
      preempt(running_.back());
      placed = grow(s, s.computed + count);
    }
    if (!placed) {  // the newest itself: back to the queue
      plan.preempted.push_back(id);
      preempt(id);
      break;
    }
    plan.items.push_back({id, s.computed, count, s.computed + count == s.known});
    budget -= count;
    ++i;
  }
  // Then new sequences, while the budget, the running limit and the free blocks allow.
  while (!waiting_.empty() && budget > 0 && static_cast<std::int64_t>(running_.size()) < options_.max_num_seqs) {
    const std::int64_t id = waiting_.front();
    if (std::find(plan.preempted.begin(), plan.preempted.end(), id) != plan.preempted.end()) break;  // next step
    Sequence& s = sequences_.at(id);
    const std::int64_t count = std::min(s.known - s.computed, budget);
    if (!grow(s, s.computed + count)) break;
    waiting_.pop_front();
    running_.push_back(id);
    plan.items.push_back({id, s.computed, count, s.computed + count == s.known});
    budget -= count;
  }
  return plan;
}

std::vector<std::int64_t> Scheduler::step_done(const StepPlan& plan) {
  std::vector<std::int64_t> done;
  for (const auto& item : plan.items) {
    Sequence& s = sequences_.at(item.id);
    s.computed = item.start + item.count;
    if (!item.samples) continue;
    ++s.known;
    ++s.generated;
    if (s.generated < s.output) continue;
    release(s);
    running_.erase(std::find(running_.begin(), running_.end(), item.id));
    done.push_back(item.id);
  }
  return done;
}

const std::vector<std::int64_t>& Scheduler::blocks_of(std::int64_t id) const {
  return sequences_.at(id).blocks;
}

std::int64_t Scheduler::generated(std::int64_t id) const {
  return sequences_.at(id).generated;
}

}  // namespace xpuperf::serving
