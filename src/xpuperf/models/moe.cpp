#include "xpuperf/models/moe.h"

#include <cmath>
#include <map>
#include <regex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "xpuperf/models/fused_ops.h"
#include "xpuperf/torchrt/compat.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/init.h"

namespace xpuperf::models {

namespace {

// Each expert's rows in the grouped products start at a multiple of this: the weights' gradient is a
// grouped product over the rows, whose group boundaries must fall on 16 bytes.
constexpr std::int64_t kGroupAlign = 16;

// transformers 5's layout: a layer's experts as two tensors, `<layer>.mlp.experts.gate_up_proj`
// (experts, 2 × units, hidden: the gate's rows, then the up ones) and `.down_proj` (experts,
// hidden, units), the router at `<layer>.mlp.gate.weight` (or under block_sparse_moe).
bool split_fused_experts(std::map<std::string, torch::Tensor>& tensors) {
  static const std::regex kFused(R"((.*)\.(block_sparse_moe|mlp)\.experts\.gate_up_proj)");
  std::vector<std::pair<std::string, std::string>> layers;  // (the layer, the block's name there)
  for (const auto& [name, tensor] : tensors) {
    std::smatch m;
    if (name.size() < 4096 && std::regex_match(name, m, kFused)) layers.emplace_back(m[1], m[2]);
  }
  for (const auto& [layer, block] : layers) {
    const std::string from = layer + "." + block + ".", to = layer + ".block_sparse_moe.";
    const auto gate_up = tensors.at(from + "experts.gate_up_proj");
    const auto down = tensors.find(from + "experts.down_proj");
    if (down == tensors.end()) throw std::runtime_error(from + "experts.down_proj is missing");
    if (gate_up.dim() != 3 || gate_up.size(1) % 2 != 0)
      throw std::runtime_error(from + "experts.gate_up_proj: shape " + c10::str(gate_up.sizes()) +
                               ", not (experts, 2 × units, hidden)");
    const auto units = gate_up.size(1) / 2;
    tensors[to + "w_gate"] = gate_up.narrow(1, 0, units).contiguous();
    tensors[to + "w_up"] = gate_up.narrow(1, units, units).contiguous();
    tensors[to + "w_down"] = down->second;
    tensors.erase(down);
    tensors.erase(from + "experts.gate_up_proj");
    if (const auto router = tensors.find(from + "gate.weight"); router != tensors.end() && from != to) {
      tensors[to + "gate.weight"] = router->second;
      tensors.erase(router);
    }
  }
  return !layers.empty();
}

}  // namespace

bool stack_hugging_face_experts(std::map<std::string, torch::Tensor>& tensors) {
  const bool fused = split_fused_experts(tensors);
  static const std::regex kExpert(R"((.*block_sparse_moe\.)experts\.([0-9]+)\.(w[123])\.weight)");
  // layer prefix → expert → w1/w2/w3 → the file's name
  std::map<std::string, std::map<std::int64_t, std::map<std::string, std::string>>> layers;
  for (const auto& [name, tensor] : tensors) {
    std::smatch m;
    if (name.size() < 4096 && std::regex_match(name, m, kExpert) && m[2].length() <= 9)
      layers[m[1]][std::stoll(m[2])][m[3]] = name;
  }
  for (const auto& [prefix, experts] : layers) {
    const auto count = static_cast<std::int64_t>(experts.size());
    std::map<std::string, std::vector<torch::Tensor>> parts;
    for (std::int64_t j = 0; j < count; ++j) {
      const auto expert = experts.find(j);
      if (expert == experts.end())
        throw std::runtime_error(prefix + "experts: expert " + std::to_string(j) + " is missing (the file has " +
                                 std::to_string(count) + " experts, numbered otherwise)");
      for (const char* w : {"w1", "w2", "w3"}) {
        const auto found = expert->second.find(w);
        if (found == expert->second.end())
          throw std::runtime_error(prefix + "experts." + std::to_string(j) + "." + w + ".weight is missing");
        parts[w].push_back(tensors.at(found->second));
      }
    }
    for (auto& [w, list] : parts)
      for (const auto& t : list)
        if (t.sizes() != list.front().sizes())
          throw std::runtime_error(prefix + "experts.*." + w + ".weight: the experts' shapes differ");
    tensors[prefix + "w_gate"] = torch::stack(parts["w1"]);
    tensors[prefix + "w_up"] = torch::stack(parts["w3"]);
    tensors[prefix + "w_down"] = torch::stack(parts["w2"]);
    for (const auto& [j, weights] : experts)
      for (const auto& [w, name] : weights) tensors.erase(name);
  }
  return fused || !layers.empty();
}

SparseMoeBlockImpl::SparseMoeBlockImpl(std::int64_t hidden, std::int64_t intermediate, const MoeConfig& c) : config(c) {
  TORCH_CHECK(c.experts >= 2 && c.top_k >= 1 && c.top_k <= c.experts, "MoE: ", c.top_k, " of ", c.experts,
              " experts a token; 2 or more experts and 1 to that many a token");
  gate = register_module("gate", torchrt::normal_linear(hidden, c.experts, /*bias=*/false, 0.02));  // HF's range
  const torch::NoGradGuard no_grad;
  const std::int64_t units = c.expert_intermediate > 0 ? c.expert_intermediate : intermediate;
  w_gate = register_parameter("w_gate", torch::empty({c.experts, units, hidden}));
  w_up = register_parameter("w_up", torch::empty({c.experts, units, hidden}));
  w_down = register_parameter("w_down", torch::empty({c.experts, hidden, units}));
  for (const auto& w : {w_gate, w_up, w_down}) torchrt::init_normal(w, 0.0, 0.02);
  if (c.shared_intermediate > 0) {
    const auto linear = [&](const char* name, std::int64_t in, std::int64_t out) {
      return register_module(name, torchrt::normal_linear(in, out, /*bias=*/false, 0.02));
    };
    shared_gate_proj = linear("shared_gate_proj", hidden, c.shared_intermediate);
    shared_up_proj = linear("shared_up_proj", hidden, c.shared_intermediate);
    shared_down_proj = linear("shared_down_proj", c.shared_intermediate, hidden);
    shared_expert_gate = linear("shared_expert_gate", hidden, 1);
  }
}

std::vector<torch::Tensor> SparseMoeBlockImpl::split_experts(std::shared_ptr<parallel::ExpertParallel> ep) {
  const std::int64_t parts = ep->size();
  if (config.experts % parts != 0)
    throw std::invalid_argument("expert_parallel " + std::to_string(parts) + " does not divide the " +
                                std::to_string(config.experts) + " experts (num_local_experts)");
  const std::int64_t local = config.experts / parts, first = ep->rank() * local;
  const torch::NoGradGuard no_grad;
  for (auto* w : {&w_gate, &w_up, &w_down}) w->set_data(w->narrow(0, first, local).clone());
  ep_ = std::move(ep);
  return {w_gate, w_up, w_down};
}

torch::Tensor SparseMoeBlockImpl::shared_expert(const torch::Tensor& flat) {
  return torch::sigmoid(shared_expert_gate(flat)) *
         shared_down_proj(torch::silu(shared_gate_proj(flat)) * shared_up_proj(flat));
}

torch::Tensor load_balancing_loss(const torch::Tensor& probabilities, const torch::Tensor& selected,
                                  std::int64_t experts) {
  const auto mask = torch::one_hot(selected, experts).to(torch::kFloat);  // (tokens, top_k, experts)
  const auto share = mask.mean(0);                                        // (top_k, experts)
  return (share * probabilities.to(torch::kFloat).mean(0).unsqueeze(0)).sum() * static_cast<double>(experts);
}

namespace {

// The tokens' outputs (tokens, hidden): each (token, expert) pair's row of the experts' outputs,
// `rows[row_of]`, times its routing weight, added into its token's row.
torch::Tensor combine_pairs(const torch::Tensor& rows, const torch::Tensor& row_of, const torch::Tensor& token_of,
                            const torch::Tensor& pair_weights, std::int64_t tokens) {
  const auto weighted = rows.index_select(0, row_of) * pair_weights.unsqueeze(1).to(rows.scalar_type());
  return torch::zeros({tokens, rows.size(1)}, weighted.options()).index_add(0, token_of, weighted);
}

// gather_rows' autograd: the gradient gathers too (below).
struct GatherRows : torch::autograd::Function<GatherRows> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& source, const torch::Tensor& readers, const torch::Tensor& unread) {
    ctx->save_for_backward({readers, unread});
    return x.index_select(0, source);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& readers = saved[0];
    const auto& unread = saved[1];
    const auto& g = grads[0];
    auto grad = g.index_select(0, readers.reshape({-1})).view({readers.size(0), readers.size(1), g.size(1)});
    grad = readers.size(1) == 1 ? grad.squeeze(1) : grad.sum(1);
    if (unread.numel() > 0) grad.masked_fill_(unread.unsqueeze(1), 0);
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor gather_rows(const torch::Tensor& x, const torch::Tensor& source, const torch::Tensor& readers,
                          const torch::Tensor& unread) {
  TORCH_CHECK(x.dim() == 2 && source.dim() == 1 && readers.dim() == 2 && readers.size(0) == x.size(0),
              "gather_rows: x (rows, width), source (out rows), readers (rows, n)");
  // Autograd takes no undefined inputs: "none unread" is an empty mask.
  return GatherRows::apply(x, source, readers,
                           unread.defined() ? unread : torch::zeros({0}, source.options().dtype(torch::kBool)));
}

// ATen's grouped GEMM (compat::grouped_mm, with its backward): from PyTorch 2.9. Where it has fast
// kernels the device's vendor says (torchrt::device_has_feature "grouped_mm_bf16": NVIDIA's CUTLASS
// kernels for bf16 on Hopper and Blackwell).
bool SparseMoeBlockImpl::runs_grouped(const torch::Tensor& flat, bool kernels) const {
  if (!compat::kHasGroupedMm || !kernels || ep_ || config.capacity_factor > 0) return false;
  // Rows of 16 bytes' multiples, as the grouped GEMM's kernels load them.
  if (flat.size(-1) % 8 != 0 || w_gate.size(1) % 8 != 0) return false;
  const auto type = flat.device().type();
  const bool bf16 = flat.scalar_type() == torch::kBFloat16 ||
                    (compat::autocast_enabled(type) && compat::autocast_dtype(type) == torch::kBFloat16);
  // Without fast kernels ATen loops over the experts, reading their offsets back to the host.
  return bf16 && torchrt::device_has_feature(flat.device(), "grouped_mm_bf16");
}

torch::Tensor SparseMoeBlockImpl::grouped_experts(const torch::Tensor& flat, const torch::Tensor& weights,
                                                  const torch::Tensor& selected, bool kernels) {
  const auto experts = config.experts, k = config.top_k, tokens = flat.size(0), hidden = flat.size(1);
  const auto pairs = tokens * k;
  const auto expert_of = selected.reshape({-1});  // (pairs), pair p is token p / k's (p % k)-th choice
  const auto order = std::get<1>(expert_of.sort(/*stable=*/true, 0, false));  // the pairs, expert by expert
  const auto sorted_expert = expert_of.index_select(0, order);
  // Counted by a scatter: CUDA's bincount reads the largest id back to the host first.
  const auto counts =
      torch::zeros({experts}, expert_of.options()).scatter_add_(0, expert_of, torch::ones_like(expert_of));
  // Each expert's rows: its pairs, then zero rows to the next multiple of kGroupAlign. The buffer has
  // a size the host knows without waiting for the counts (every expert's padding at its most); the
  // last expert takes the rows left over, zeros, so that no row is outside a group.
  const std::int64_t rows = (pairs + experts * (kGroupAlign - 1) + kGroupAlign - 1) / kGroupAlign * kGroupAlign;
  const auto padded = torch::div(counts + (kGroupAlign - 1), kGroupAlign, "floor") * kGroupAlign;
  const auto starts = padded.cumsum(0) - padded;
  const auto ends = torch::cat({starts.narrow(0, 1, experts - 1), torch::full({1}, rows, starts.options())});
  const auto first_pair = counts.cumsum(0) - counts;  // each expert's first place in `order`
  const auto row = starts.index_select(0, sorted_expert) + torch::arange(pairs, order.options()) -
                   first_pair.index_select(0, sorted_expert);
  // Pair p (token p / k's (p % k)-th choice) sits in buffer row place[p]; buffer row r holds token
  // source[r] (the padding rows token 0: their outputs are never read) and its output is pair
  // owner[r]'s (the padding rows none). Both ways the rows move by gathers (gather_rows): ATen's
  // index_copy into a zeroed buffer and index_add (its kernel also index_select's backward) took
  // 6.9 ms of a 100.8 ms step on an H100 (the mixtral README).
  const auto place = torch::empty_like(row).index_copy_(0, order, row);
  const auto source = torch::zeros({rows}, order.options()).index_copy_(0, row, torch::div(order, k, "floor"));
  const auto owner = torch::full({rows}, pairs, order.options()).index_copy_(0, row, order);
  const auto padding = owner == pairs;
  const auto type = torch::kBFloat16;
  const auto buffer = gather_rows(flat.to(type), source, place.view({tokens, k}));
  const auto offsets = ends.to(torch::kInt);
  const auto product = [&](const torch::Tensor& in, const torch::Tensor& w) {  // w: (experts, out, in)
    return compat::grouped_mm(in, w.to(type).transpose(1, 2), offsets);
  };
  const auto units = fused::silu_mul(product(buffer, w_gate), product(buffer, w_up), kernels);
  routed = pairs;
  dropped = 0;
  // Each token's k outputs weighed and summed: the products rounded to bf16, then added, as the index_add
  // of the weighted rows added them.
  const auto outputs = gather_rows(product(units, w_down), place, owner.masked_fill(padding, 0).unsqueeze(1), padding);
  const auto weighted = outputs * weights.reshape({-1, 1}).to(outputs.scalar_type());
  return weighted.view({tokens, k, hidden}).sum(1);
}

torch::Tensor SparseMoeBlockImpl::forward(const torch::Tensor& x, bool kernels) {
  const auto sizes = x.sizes().vec();
  const auto hidden = x.size(-1), experts = config.experts, k = config.top_k;
  const auto flat = x.reshape({-1, hidden});
  const auto logits = gate(flat).to(torch::kFloat);  // (tokens, experts)
  const auto probabilities = torch::softmax(logits, -1);
  auto [weights, selected] = probabilities.topk(k, -1);  // (tokens, k)
  if (config.normalize_top_k) weights = weights / weights.sum(-1, true);
  load_balancing_loss = models::load_balancing_loss(probabilities, selected, experts);
  z_loss = torch::logsumexp(logits, -1).pow(2).mean();
  auto y = runs_grouped(flat, kernels) ? grouped_experts(flat, weights, selected, kernels)
                                       : batched_experts(flat, weights, selected, kernels);
  if (shared_expert_gate) y = y + shared_expert(flat).to(y.scalar_type());
  return y.view(sizes);
}

torch::Tensor SparseMoeBlockImpl::batched_experts(const torch::Tensor& flat, const torch::Tensor& weights,
                                                  const torch::Tensor& selected, bool kernels) {
  const auto experts = config.experts, k = config.top_k, tokens = flat.size(0), hidden = flat.size(1);
  // Each (token, expert) pair's place in its expert's buffer, in token order: the running count along
  // its expert's row of the (experts, pairs) one-hot. The count runs along the innermost dimension:
  // ATen scans an outer dimension with one thread a column, each stepping through every pair in turn
  // (16,384 dependent steps a layer for 8,192 tokens, top-2), where an innermost scan is a block's.
  const auto expert_of = selected.reshape({-1});                             // (tokens × k)
  const auto one_hot = torch::one_hot(expert_of, experts).t().contiguous();  // (experts, tokens × k)
  const auto place = one_hot.cumsum(1).gather(0, expert_of.unsqueeze(0)).squeeze(0) - 1;
  std::int64_t capacity =
      config.capacity_factor > 0
          ? static_cast<std::int64_t>(
                std::ceil(config.capacity_factor * static_cast<double>(tokens * k) / static_cast<double>(experts)))
          : std::max<std::int64_t>(1, one_hot.sum(1).max().item<std::int64_t>());
  // The exchanged buffers are one size on every rank of the group.
  if (ep_) capacity = ep_->max_over_group(capacity, flat.options());
  routed = tokens * k;
  auto token_of = torch::arange(tokens, expert_of.options()).repeat_interleave(k);
  auto slot = expert_of * capacity + place;
  auto pair_weights = weights.reshape({-1});
  dropped = 0;
  // Without a capacity factor the capacity is the largest expert's count and every pair is kept: no
  // second wait for the device to say which.
  if (config.capacity_factor > 0) {
    const auto kept = (place < capacity).nonzero().squeeze(1);
    dropped = routed - kept.size(0);
    token_of = token_of.index_select(0, kept);
    slot = slot.index_select(0, kept);
    pair_weights = pair_weights.index_select(0, kept);
  }

  // The experts as three batched products over (experts, capacity, ·) buffers.
  const auto buffer =
      torch::zeros({experts * capacity, hidden}, flat.options()).index_copy(0, slot, flat.index_select(0, token_of));
  // Under expert parallelism this rank's experts take their buffers from every rank of the group.
  const auto buffers = buffer.view({experts, capacity, hidden});
  const auto in = ep_ ? ep_->dispatch(buffers) : buffers;
  const auto units =
      fused::silu_mul(torch::bmm(in, w_gate.transpose(1, 2)), torch::bmm(in, w_up.transpose(1, 2)), kernels);
  const auto outputs = torch::bmm(units, w_down.transpose(1, 2));
  const auto out = (ep_ ? ep_->combine(outputs) : outputs).reshape({experts * capacity, hidden});
  return combine_pairs(out, slot, token_of, pair_weights, tokens);
}

torch::Tensor SparseMoeBlockImpl::forward_per_token(const torch::Tensor& x) {
  TORCH_CHECK(!ep_, "MoE: the per-token reference needs every expert; this rank holds ", w_gate.size(0), " of ",
              config.experts);
  const auto hidden = x.size(-1);
  const auto flat = x.reshape({-1, hidden});
  const auto probabilities = torch::softmax(gate(flat).to(torch::kFloat), -1);
  auto [weights, selected] = probabilities.topk(config.top_k, -1);
  if (config.normalize_top_k) weights = weights / weights.sum(-1, true);
  std::vector<torch::Tensor> rows;
  for (std::int64_t t = 0; t < flat.size(0); ++t) {
    auto y = torch::zeros({hidden}, flat.options());
    for (std::int64_t j = 0; j < config.top_k; ++j) {
      const auto e = selected[t][j].item<std::int64_t>();
      const auto units = torch::silu(torch::mv(w_gate[e], flat[t])) * torch::mv(w_up[e], flat[t]);
      y = y + weights[t][j].to(flat.scalar_type()) * torch::mv(w_down[e], units);
    }
    if (shared_expert_gate) y = y + shared_expert(flat[t].unsqueeze(0))[0];
    rows.push_back(y);
  }
  return torch::stack(rows).view(x.sizes());
}

}  // namespace xpuperf::models
