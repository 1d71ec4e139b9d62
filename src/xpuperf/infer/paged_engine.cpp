#include "xpuperf/infer/paged_engine.h"

#include <algorithm>
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
  // Every index the step needs, made on the host into one buffer that goes to the device in one
  // copy: a copy each would cost the step as many transfers and waits.
  std::vector<std::int64_t> ids, positions, rows, sample_rows, decode_tokens, decode_positions, decode_table;
  std::vector<std::vector<std::int64_t>> contexts;  // a prefill chunk's context rows
  std::size_t widest = 0;                           // blocks of the longest decoding row
  for (const auto& item : plan.items)
    if (item.count == 1) widest = std::max(widest, scheduler_.blocks_of(item.id).size());
  models::PagedBatch batch;
  batch.cache = &cache_;
  for (const auto& item : plan.items) {
    const auto& table = scheduler_.blocks_of(item.id);
    const auto row_of = [&](std::int64_t p) { return table[static_cast<std::size_t>(p / block)] * block + p % block; };
    models::PagedBatch::Sequence s;
    s.first = static_cast<std::int64_t>(ids.size());
    s.count = item.count;
    s.start = item.start;
    if (item.count > 1) {  // a chunk attends over its context's rows
      contexts.emplace_back();
      for (std::int64_t p = 0; p < item.start + item.count; ++p) contexts.back().push_back(row_of(p));
    } else {  // a decode reads its block table (padded with block 0)
      decode_tokens.push_back(s.first);
      decode_positions.push_back(item.start);
      batch.decode_visible = std::max(batch.decode_visible, item.start + 1);
      decode_table.insert(decode_table.end(), table.begin(), table.end());
      decode_table.resize(decode_table.size() + widest - table.size(), 0);
    }
    for (std::int64_t p = item.start; p < item.start + item.count; ++p) {
      ids.push_back(tokens_.at(item.id).ids[static_cast<std::size_t>(p)]);
      positions.push_back(p);
      rows.push_back(row_of(p));
    }
    if (item.samples) sample_rows.push_back(s.first + s.count - 1);
    batch.sequences.push_back(std::move(s));
  }
  std::vector<std::int64_t> host;
  const auto put = [&host](const std::vector<std::int64_t>& part) {
    const auto at = static_cast<std::int64_t>(host.size());
    host.insert(host.end(), part.begin(), part.end());
    return std::pair<std::int64_t, std::int64_t>{at, static_cast<std::int64_t>(part.size())};
  };
  const auto at_ids = put(ids), at_positions = put(positions), at_rows = put(rows), at_samples = put(sample_rows);
  const auto at_decode_tokens = put(decode_tokens), at_decode_positions = put(decode_positions),
             at_decode_table = put(decode_table);
  std::vector<std::pair<std::int64_t, std::int64_t>> at_contexts;
  for (const auto& c : contexts) at_contexts.push_back(put(c));
  const torch::Tensor all =
      torch::from_blob(host.data(), {static_cast<std::int64_t>(host.size())}, torch::kLong).to(device_, true);
  const auto part = [&all](std::pair<std::int64_t, std::int64_t> at) { return all.narrow(0, at.first, at.second); };
  const auto t = static_cast<std::int64_t>(ids.size());
  batch.cache_rows = part(at_rows);
  std::size_t chunk = 0;
  for (auto& s : batch.sequences)
    if (s.count > 1) s.context_rows = part(at_contexts[chunk++]);
  if (!decode_tokens.empty()) {
    const auto b = static_cast<std::int64_t>(decode_tokens.size());
    batch.decode_tokens = part(at_decode_tokens);
    batch.decode_positions = part(at_decode_positions).view({b, 1});
    batch.decode_table = part(at_decode_table).view({b, static_cast<std::int64_t>(widest)});
  }
  models::KvStep step = models::KvStep::paged_step(batch, part(at_positions).view({1, t}));
  step.logit_rows = part(at_samples);
  const auto ids_tensor = part(at_ids).view({1, t});
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
