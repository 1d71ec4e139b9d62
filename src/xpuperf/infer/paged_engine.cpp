#include "xpuperf/infer/paged_engine.h"

#include <chrono>
#include <stdexcept>
#include <string>

namespace xpuperf::infer {

PagedEngine::PagedEngine(models::CausalDecoder& decoder, torch::Device device, torch::Dtype dtype,
                         serving::SchedulerOptions options)
    : decoder_(decoder), device_(device), scheduler_(options) {
  cache_ =
      models::PagedKvCache::allocate(decoder.decoder_layers(), options.blocks, options.block_size, decoder.kv_heads(),
                                     decoder.head_dim(), torch::TensorOptions().dtype(dtype).device(device));
}

void PagedEngine::add(std::int64_t id, const std::vector<std::int64_t>& prompt, std::int64_t output_tokens) {
  const auto limit = decoder_.max_positions();
  const auto length = static_cast<std::int64_t>(prompt.size()) + output_tokens;
  if (limit > 0 && length - 1 > limit)
    throw std::invalid_argument("sequence " + std::to_string(id) + ": " + std::to_string(prompt.size()) + " + " +
                                std::to_string(output_tokens) + " tokens pass the model's " + std::to_string(limit) +
                                " positions (max_position_embeddings)");
  scheduler_.add(id, static_cast<std::int64_t>(prompt.size()), output_tokens);
  tokens_[id] = {prompt, static_cast<std::int64_t>(prompt.size())};
}

PagedEngine::StepResult PagedEngine::step() {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  const auto ms_since = [&started] {
    return std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  };
  StepResult result;
  const serving::StepPlan plan = scheduler_.next_step();
  result.preempted = plan.preempted;
  if (plan.empty()) return result;
  torch::NoGradGuard no_grad;
  const std::int64_t block = scheduler_.options().block_size;
  std::vector<std::int64_t> ids, positions, rows, sample_rows;
  models::PagedBatch batch;
  batch.cache = &cache_;
  const auto index = torch::TensorOptions().dtype(torch::kLong);
  for (const auto& item : plan.items) {
    const auto& table = scheduler_.blocks_of(item.id);
    const auto row_of = [&](std::int64_t p) { return table[static_cast<std::size_t>(p / block)] * block + p % block; };
    models::PagedBatch::Sequence s;
    s.first = static_cast<std::int64_t>(ids.size());
    s.count = item.count;
    s.start = item.start;
    if (item.count > 1) {  // a chunk attends over its context's rows; a decode reads the block table
      std::vector<std::int64_t> context;
      for (std::int64_t p = 0; p < item.start + item.count; ++p) context.push_back(row_of(p));
      s.context_rows = torch::tensor(context, index).to(device_);
    }
    s.blocks = table;
    for (std::int64_t p = item.start; p < item.start + item.count; ++p) {
      ids.push_back(tokens_.at(item.id).ids[static_cast<std::size_t>(p)]);
      positions.push_back(p);
      rows.push_back(row_of(p));
    }
    if (item.samples) sample_rows.push_back(s.first + s.count - 1);
    batch.sequences.push_back(std::move(s));
  }
  const auto t = static_cast<std::int64_t>(ids.size());
  batch.cache_rows = torch::tensor(rows, index).to(device_);
  batch.finish(device_);
  const auto position_tensor = torch::tensor(positions, index).view({1, t}).to(device_);
  models::KvStep step = models::KvStep::paged_step(batch, position_tensor);
  step.logit_rows = torch::tensor(sample_rows, index).to(device_);
  const auto ids_tensor = torch::tensor(ids, index).view({1, t}).to(device_);
  result.host_ms = ms_since();
  torch::Tensor picked;
  if (!sample_rows.empty()) {
    const auto logits = decoder_.decoder_logits(ids_tensor, &step, 0);  // (1, sampled, vocab)
    picked = logits[0].argmax(-1).to(torch::kCPU);
  } else {
    decoder_.decoder_logits(ids_tensor, &step, 0);
  }
  std::size_t next = 0;
  for (const auto& item : plan.items) {
    if (!item.samples) continue;
    Tokens& seq = tokens_.at(item.id);
    if (static_cast<std::int64_t>(seq.ids.size()) == seq.prompt) result.first_token.push_back(item.id);
    seq.ids.push_back(picked[static_cast<std::int64_t>(next++)].item<std::int64_t>());
  }
  result.tokens = t;
  result.sequences = static_cast<std::int64_t>(plan.items.size());
  result.sampled = static_cast<std::int64_t>(sample_rows.size());
  result.finished = scheduler_.step_done(plan);
  result.step_ms = ms_since();
  return result;
}

std::vector<std::int64_t> PagedEngine::output(std::int64_t id) const {
  const Tokens& seq = tokens_.at(id);
  return {seq.ids.begin() + seq.prompt, seq.ids.end()};
}

}  // namespace xpuperf::infer
