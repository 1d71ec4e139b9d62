#include "xpuperf/infer/paged_engine.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "xpuperf/torchrt/compat.h"
#include "xpuperf/torchrt/device.h"

namespace xpuperf::infer {

std::vector<std::int64_t> decode_row_buckets(std::int64_t max_rows) {
  std::vector<std::int64_t> out;
  for (std::int64_t r = 1; r < max_rows && r < 32; r *= 2) out.push_back(r);
  for (std::int64_t r = 32; r < max_rows; r += 32) out.push_back(r);
  if (max_rows > 0) out.push_back(max_rows);
  return out;
}

std::vector<std::int64_t> decode_visible_buckets(std::int64_t max_length, std::int64_t block_size) {
  const auto round_up = [block_size](std::int64_t n) { return (n + block_size - 1) / block_size * block_size; };
  const std::int64_t longest = round_up(std::max<std::int64_t>(max_length, 1));
  std::vector<std::int64_t> out;
  for (std::int64_t v = round_up(256); v < longest; v *= 2) out.push_back(v);
  out.push_back(longest);
  return out;
}

// A decode-only step's fixed shapes: `rows` tokens, each seeing at most `visible` keys through a
// block table of `width` blocks. Its inputs live in one device tensor that each step fills with one
// copy: the rows' token ids | positions | cache rows | block tables (rows × width).
struct PagedEngine::Bucket {
  std::int64_t rows = 0, visible = 0, width = 0;
  torch::Tensor inputs;
  torch::Tensor picked;  // (rows): each row's greedy token, rewritten by each run or replay
  std::unique_ptr<torchrt::DeviceGraph> graph;
  std::int64_t size() const { return rows * (3 + width); }
};

PagedEngine::PagedEngine(models::CausalDecoder& decoder, torch::Device device, torch::Dtype dtype,
                         serving::SchedulerOptions options, DecodeBuckets buckets)
    : decoder_(decoder), device_(device), scheduler_(options), buckets_options_(buckets) {
  scratch_block_ = options.blocks;  // past the scheduler's blocks: no sequence ever holds it
  cache_ = models::PagedKvCache::allocate(decoder.decoder_layers(), options.blocks + 1, options.block_size,
                                          decoder.kv_heads(), decoder.head_dim(),
                                          torch::TensorOptions().dtype(dtype).device(device));
  if (buckets_options_.enabled) prepare_buckets();
}

PagedEngine::~PagedEngine() = default;

void PagedEngine::prepare_buckets() {
  DecodeBuckets& o = buckets_options_;
  if (o.max_rows <= 0) o.max_rows = scheduler_.options().max_num_seqs;
  if (o.max_length <= 0) o.max_length = decoder_.max_positions();
  if (o.max_length <= 0)
    throw std::invalid_argument("decode buckets: the model sets no positions; give the longest sequence (max_length)");
  const std::int64_t block = scheduler_.options().block_size;
  row_buckets_ = decode_row_buckets(o.max_rows);
  visible_buckets_ = decode_visible_buckets(o.max_length, block);
  std::int64_t largest = 0;
  for (const auto rows : row_buckets_)
    for (const auto visible : visible_buckets_) {
      auto b = std::make_unique<Bucket>();
      b->rows = rows, b->visible = visible, b->width = visible / block;
      std::vector<std::int64_t> padded(static_cast<std::size_t>(b->size()));  // until a step fills them
      pad_rows(*b, padded.data());
      b->inputs = torch::tensor(padded, torch::kLong).to(device_);
      largest = std::max(largest, b->size());
      buckets_.emplace(std::make_pair(rows, visible), std::move(b));
    }
  staging_ = torch::empty({largest}, torch::TensorOptions().dtype(torch::kLong).pinned_memory(!device_.is_cpu()));
  if (!o.graphs || !torchrt::device_has_graphs(device_.type())) return;
  // One memory pool for all, the first graph's: replays never overlap, and each replay's tokens
  // are copied to the host before the next step.
  const torch::NoGradGuard no_grad;
  const torchrt::DeviceGraph* first = nullptr;
  for (auto& [key, b] : buckets_) {
    for (int i = 0; i < 2; ++i) run_bucket(*b);  // lazy initialisation outside the capture
    b->graph = torchrt::make_device_graph(device_, first);
    Bucket& bucket = *b;
    b->graph->capture([&] { bucket.picked = run_bucket(bucket); });
    if (!first) first = b->graph.get();
  }
}

void PagedEngine::restart(std::int64_t max_num_seqs) {
  serving::SchedulerOptions o = scheduler_.options();
  o.max_num_seqs = max_num_seqs;
  scheduler_ = serving::Scheduler(o);
  tokens_.clear();
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

void PagedEngine::pad_rows(const Bucket& b, std::int64_t* host) const {
  const std::int64_t r = b.rows;
  std::fill(host, host + 2 * r, 0);  // token 0 at position 0 of the scratch block
  std::fill(host + 2 * r, host + 3 * r, scratch_block_ * scheduler_.options().block_size);
  std::fill(host + 3 * r, host + b.size(), scratch_block_);
}

torch::Tensor PagedEngine::run_bucket(Bucket& b) {
  const std::int64_t r = b.rows;
  const auto positions = b.inputs.narrow(0, r, r);
  models::PagedBatch batch;
  batch.cache = &cache_;
  batch.cache_rows = b.inputs.narrow(0, 2 * r, r);
  batch.decode_positions = positions.view({r, 1});
  batch.decode_table = b.inputs.narrow(0, 3 * r, r * b.width).view({r, b.width});
  batch.decode_visible = b.visible;
  batch.decode_all = true;
  const models::KvStep step = models::KvStep::paged_step(batch, positions.view({1, r}));
  return decoder_.decoder_logits(b.inputs.narrow(0, 0, r).view({1, r}), &step, 0)[0].argmax(-1);
}

PagedEngine::Bucket* PagedEngine::bucket_for(const serving::StepPlan& plan) {
  if (buckets_.empty()) return nullptr;
  std::int64_t visible = 0;
  for (const auto& item : plan.items) {
    if (item.count != 1) return nullptr;
    visible = std::max(visible, item.start + 1);
  }
  const auto rows =
      std::lower_bound(row_buckets_.begin(), row_buckets_.end(), static_cast<std::int64_t>(plan.items.size()));
  const auto keys = std::lower_bound(visible_buckets_.begin(), visible_buckets_.end(), visible);
  if (rows == row_buckets_.end() || keys == visible_buckets_.end()) return nullptr;
  return buckets_.at({*rows, *keys}).get();
}

torch::Tensor PagedEngine::bucketed_inputs_and_run(const serving::StepPlan& plan, Bucket& b,
                                                   const std::function<void()>& issued) {
  const std::int64_t block = scheduler_.options().block_size, r = b.rows;
  auto* host = staging_.data_ptr<std::int64_t>();
  pad_rows(b, host);
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    const auto& item = plan.items[i];
    const auto& table = scheduler_.blocks_of(item.id);
    const std::int64_t p = item.start;
    TORCH_CHECK(static_cast<std::int64_t>(table.size()) <= b.width, "paged engine: sequence ", item.id, " holds ",
                table.size(), " blocks, its bucket's tables ", b.width);
    host[i] = tokens_.at(item.id).ids[static_cast<std::size_t>(p)];
    host[r + static_cast<std::int64_t>(i)] = p;
    host[2 * r + static_cast<std::int64_t>(i)] = table[static_cast<std::size_t>(p / block)] * block + p % block;
    std::copy(table.begin(), table.end(), host + 3 * r + static_cast<std::int64_t>(i) * b.width);
  }
  b.inputs.copy_(staging_.narrow(0, 0, b.size()), /*non_blocking=*/true);
  if (b.graph)
    b.graph->replay();
  else
    b.picked = run_bucket(b);
  issued();
  return b.picked.narrow(0, 0, static_cast<std::int64_t>(plan.items.size())).to(torch::kCPU);
}

torch::Tensor PagedEngine::general_inputs_and_run(const serving::StepPlan& plan, const std::function<void()>& issued) {
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
    if (item.count > 1 && item.start > 0) {  // a later chunk attends over its context's rows
      contexts.emplace_back();
      for (std::int64_t p = 0; p < item.start + item.count; ++p) contexts.back().push_back(row_of(p));
    } else if (item.count == 1) {  // a decode reads its block table (padded with the scratch block)
      decode_tokens.push_back(s.first);
      decode_positions.push_back(item.start);
      batch.decode_visible = std::max(batch.decode_visible, item.start + 1);
      decode_table.insert(decode_table.end(), table.begin(), table.end());
      decode_table.resize(decode_table.size() + widest - table.size(), scratch_block_);
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
    if (s.count > 1 && s.start > 0) s.context_rows = part(at_contexts[chunk++]);
  if (!decode_tokens.empty()) {
    const auto b = static_cast<std::int64_t>(decode_tokens.size());
    batch.decode_tokens = part(at_decode_tokens);
    batch.decode_positions = part(at_decode_positions).view({b, 1});
    batch.decode_table = part(at_decode_table).view({b, static_cast<std::int64_t>(widest)});
  }
  models::KvStep step = models::KvStep::paged_step(batch, part(at_positions).view({1, t}));
  step.logit_rows = part(at_samples);
  const auto ids_tensor = part(at_ids).view({1, t});
  const compat::AttentionWithoutCudnn no_plans;                       // chunks of every length
  const auto logits = decoder_.decoder_logits(ids_tensor, &step, 0);  // (1, sampled, vocab)
  const auto picked = sample_rows.empty() ? torch::Tensor() : logits[0].argmax(-1);
  issued();
  return picked.defined() ? picked.to(torch::kCPU) : picked;
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
  const torch::NoGradGuard no_grad;
  const auto issued = [&] { result.host_ms = ms_since(); };
  torch::Tensor picked;  // on the host: a bucket's a token each item, the general step's each sampling item
  Bucket* bucket = bucket_for(plan);
  if (bucket) {
    picked = bucketed_inputs_and_run(plan, *bucket, issued);
    result.bucketed = true;
    result.replayed = bucket->graph != nullptr;
  } else {
    picked = general_inputs_and_run(plan, issued);
  }
  if (picked.defined()) picked = picked.contiguous();
  const std::int64_t* tokens = picked.defined() ? picked.data_ptr<std::int64_t>() : nullptr;
  std::size_t next = 0;
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    const auto& item = plan.items[i];
    if (!item.samples) continue;
    Tokens& seq = tokens_.at(item.id);
    if (static_cast<std::int64_t>(seq.ids.size()) == seq.prompt) result.first_token.push_back(item.id);
    seq.ids.push_back(tokens[bucket ? i : next++]);
    ++result.sampled;
  }
  result.tokens = plan.tokens();
  result.sequences = static_cast<std::int64_t>(plan.items.size());
  result.finished = scheduler_.step_done(plan);
  result.step_ms = ms_since();
  return result;
}

std::vector<std::int64_t> PagedEngine::output(std::int64_t id) const {
  const Tokens& seq = tokens_.at(id);
  return {seq.ids.begin() + seq.prompt, seq.ids.end()};
}

std::int64_t PagedEngine::graphs() const {
  std::int64_t n = 0;
  for (const auto& [key, b] : buckets_) n += b->graph ? 1 : 0;
  return n;
}

std::string PagedEngine::describe() const {
  if (buckets_.empty()) return "decode steps eager, unpadded";
  const auto list = [](const std::vector<std::int64_t>& v) {
    std::ostringstream s;
    for (std::size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
    return s.str();
  };
  std::ostringstream s;
  s << "decode-only steps padded to " << row_buckets_.size() << " row buckets (" << list(row_buckets_) << ") and "
    << visible_buckets_.size() << " visible-key buckets (" << list(visible_buckets_) << "), ";
  if (graphs() > 0)
    s << graphs() << " device graphs captured up front";
  else
    s << "run eagerly (no device graphs here)";
  return s.str();
}

}  // namespace xpuperf::infer
