#include "xpuperf/infer/decoder_engine.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "xpuperf/torchrt/device.h"

namespace xpuperf::infer {

struct DecoderEngine::Graph {
  std::unique_ptr<torchrt::DeviceGraph> graph;
  torch::Tensor logits;  // static: each replay writes it
};

DecoderEngine::DecoderEngine(std::shared_ptr<torch::nn::Module> module, models::CausalDecoder& decoder,
                             torch::Device device, torch::Dtype dtype, DecoderOptions options)
    : module_(std::move(module)), decoder_(decoder), device_(device), options_(options) {
  if (options_.slots < 1) throw std::invalid_argument("generation needs at least one slot");
  if (decoder_.max_positions() > 0 && options_.max_tokens > decoder_.max_positions())
    throw std::invalid_argument("a sequence of " + std::to_string(options_.max_tokens) + " tokens is longer than the " +
                                std::to_string(decoder_.max_positions()) + " positions of the model");
  options_.length_bucket = std::max<std::int64_t>(1, std::min(options_.length_bucket, options_.max_tokens));
  if (!torchrt::device_has_graphs(device_.type())) options_.cuda_graphs = false;
  const torch::NoGradGuard no_grad;
  module_->to(device_, dtype);
  module_->eval();
  decoder_.fuse_for_inference();
  cache_ =
      models::KvCache::allocate(decoder_.decoder_layers(), options_.slots, options_.max_tokens, decoder_.kv_heads(),
                                decoder_.head_dim(), torch::TensorOptions().device(device_).dtype(dtype));
  const auto longs = torch::TensorOptions().device(device_).dtype(torch::kLong);
  tokens_ = torch::zeros({options_.slots, 1}, longs);
  positions_ = torch::zeros({options_.slots, 1}, longs);
  host_positions_.assign(static_cast<std::size_t>(options_.slots), 0);
}

DecoderEngine::~DecoderEngine() = default;

void DecoderEngine::set_sampling(double temperature, std::int64_t top_k) {
  options_.temperature = temperature;
  options_.top_k = top_k;
}

torch::Tensor DecoderEngine::pick(const torch::Tensor& logits) {
  if (options_.temperature <= 0) return logits.argmax(-1);
  auto scaled = logits.to(torch::kFloat) / options_.temperature;
  if (options_.top_k > 0 && options_.top_k < scaled.size(-1)) {
    const auto [values, indices] = scaled.topk(options_.top_k, -1);
    return indices.gather(-1, torch::multinomial(torch::softmax(values, -1), 1)).squeeze(-1);
  }
  return torch::multinomial(torch::softmax(scaled, -1), 1).squeeze(-1);
}

void DecoderEngine::prefill(std::int64_t first_slot, const torch::Tensor& prompts) {
  const auto rows = prompts.size(0), tokens = prompts.size(1);
  if (first_slot < 0 || first_slot + rows > options_.slots)
    throw std::invalid_argument("prefill: slots " + std::to_string(first_slot) + ".." +
                                std::to_string(first_slot + rows - 1) + " outside the cache's " +
                                std::to_string(options_.slots));
  if (tokens < 1 || tokens >= options_.max_tokens)
    throw std::invalid_argument("prefill: a prompt of " + std::to_string(tokens) + " tokens leaves no room in " +
                                std::to_string(options_.max_tokens) + " cached positions");
  const torch::NoGradGuard no_grad;
  const auto slots = torch::arange(first_slot, first_slot + rows, tokens_.options());
  const auto step = models::KvStep::prefill(cache_, slots, tokens);
  const auto logits = decoder_.decoder_logits(prompts.to(device_), &step, 1).select(1, 0);
  tokens_.narrow(0, first_slot, rows).copy_(pick(logits).view({rows, 1}));
  for (std::int64_t r = 0; r < rows; ++r) host_positions_[static_cast<std::size_t>(first_slot + r)] = tokens;
}

std::int64_t DecoderEngine::rows_bucket(std::int64_t rows) const {
  std::int64_t b = 1;
  while (b < rows) b *= 2;
  return std::min(b, options_.slots);
}

std::int64_t DecoderEngine::visible_bucket(std::int64_t longest) const {
  const std::int64_t b = options_.length_bucket;
  return std::min(options_.max_tokens, (longest + b - 1) / b * b);
}

torch::Tensor DecoderEngine::step_logits(std::int64_t rows, std::int64_t visible) {
  const auto step = models::KvStep::decode(cache_, positions_.narrow(0, 0, rows), visible);
  return decoder_.decoder_logits(tokens_.narrow(0, 0, rows), &step, 1).select(1, 0);
}

void DecoderEngine::decode(const std::vector<std::int64_t>& busy) {
  if (busy.empty()) return;
  std::int64_t longest = 0;
  for (const auto s : busy) {
    if (s < 0 || s >= options_.slots)
      throw std::invalid_argument("decode: slot " + std::to_string(s) + " is not a slot");
    longest = std::max(longest, host_positions_[static_cast<std::size_t>(s)] + 1);
  }
  if (longest > options_.max_tokens)
    throw std::invalid_argument("decode: a sequence would pass the cache's " + std::to_string(options_.max_tokens) +
                                " positions");
  const std::int64_t rows = rows_bucket(busy.back() + 1), visible = visible_bucket(longest);
  const torch::NoGradGuard no_grad;
  positions_.copy_(torch::from_blob(host_positions_.data(), {options_.slots, 1}, torch::kLong));
  torch::Tensor logits;
  if (options_.cuda_graphs) capture_all();  // once; every bucket
  if (const auto it = graphs_.find({rows, visible}); it != graphs_.end()) {
    it->second->graph->replay();
    logits = it->second->logits;
  } else {
    logits = step_logits(rows, visible);
  }
  tokens_.narrow(0, 0, rows).copy_(pick(logits).view({rows, 1}));
  for (const auto s : busy) ++host_positions_[static_cast<std::size_t>(s)];
}

void DecoderEngine::capture_all() {
  if (!options_.cuda_graphs || !graphs_.empty()) return;
  const torch::NoGradGuard no_grad;
  std::vector<std::int64_t> rows;
  for (std::int64_t r = 1; r < options_.slots; r *= 2) rows.push_back(r);
  rows.push_back(options_.slots);
  // One memory pool for all, the first graph's: replays never overlap, and each step's logits are
  // used before the next. The warm-up and captured steps write keys and values at positions_: each
  // slot's next position (or 0 before anything ran), which the slot's real next step writes again
  // before reading it.
  const torchrt::DeviceGraph* first = nullptr;
  for (const auto r : rows)
    for (std::int64_t visible = options_.length_bucket;; visible += options_.length_bucket) {
      visible = std::min(visible, options_.max_tokens);
      auto g = std::make_unique<Graph>();
      for (int i = 0; i < 2; ++i) step_logits(r, visible);  // lazy initialisation outside the capture
      g->graph = torchrt::make_device_graph(device_, first);
      g->graph->capture([&] { g->logits = step_logits(r, visible); });
      if (!first) first = g->graph.get();
      graphs_.emplace(std::make_pair(r, visible), std::move(g));
      if (visible == options_.max_tokens) break;
    }
}

torch::Tensor DecoderEngine::last_tokens(std::int64_t rows) const {
  return tokens_.narrow(0, 0, rows).view({rows}).to(torch::kCPU);
}

std::string DecoderEngine::describe() const {
  std::ostringstream s;
  s << "KV cache contiguous and preallocated: " << options_.slots << " slots x " << options_.max_tokens << " tokens ("
    << cache_.bytes() / (1u << 30) << " GiB); ";
  if (options_.cuda_graphs) {
    s << "a device graph per decode batch (powers of two to " << options_.slots << ") and visible length (multiples of "
      << options_.length_bucket << " to " << options_.max_tokens << ")";
  } else {
    s << "eager decode steps (graphs need a device whose vendor brings them, as NVIDIA's CUDA graphs)";
  }
  return s.str();
}

}  // namespace xpuperf::infer
