#include "xpuperf/parallel/zero.h"

#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <stdexcept>

namespace xpuperf::parallel {

struct ZeroSharding::Unit {
  std::vector<std::size_t> params;  // indices into params_, in the unit's order
  bool sharded = false;             // stage 3's blocks: the values are kept as this rank's share only
  std::int64_t padded = 0;          // elements, a multiple of the world size
  std::int64_t share = 0;           // padded / world size
  torch::Tensor flat;               // every parameter's values (a sharded unit: while gathered)
  torch::Tensor values_share;       // a sharded unit: this rank's share of the values, kept
  torch::Tensor grad;               // stage 1: the full gradients, kept; stages 2, 3: the buffer of this micro-batch
  torch::Tensor grad_share;         // this rank's share of the averaged gradients
  torch::Tensor reduced;            // this micro-batch's reduce-scatter output
  int missing = 0;                  // gradients not yet arrived this micro-batch
  std::function<void()> wait;       // the reduce-scatter in flight
};

namespace {

// A parameter of `sizes` and `strides` inside a unit buffer, laid out as the parameter is
// (channels-last stays).
torch::Tensor view_in(const torch::Tensor& buffer, std::int64_t offset, at::IntArrayRef sizes,
                      at::IntArrayRef strides) {
  std::int64_t numel = 1;
  for (auto s : sizes) numel *= s;
  return buffer.narrow(0, offset, numel).as_strided(sizes, strides);
}

// Stage 3's edges of a block, as an identity in the autograd graph: before the block, forward
// gathers its parameters and backward (once the block's backward is done) frees them; after the
// block, forward frees them and backward gathers them before the block's backward needs them.
struct BlockEdge : torch::autograd::Function<BlockEdge> {
  static void gather_or_release(std::int64_t zero, std::int64_t unit, bool gather) {
    auto* z = reinterpret_cast<ZeroSharding*>(zero);
    if (gather)
      z->gather(static_cast<std::size_t>(unit));
    else
      z->release(static_cast<std::size_t>(unit));
  }
  // `gather_forward`: 1 before the block, 0 after it.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, std::int64_t zero,
                               std::int64_t unit, std::int64_t gather_forward) {
    ctx->saved_data["zero"] = zero;
    ctx->saved_data["unit"] = unit;
    ctx->saved_data["gather_forward"] = gather_forward;
    gather_or_release(zero, unit, gather_forward != 0);
    return x.view_as(x);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    gather_or_release(ctx->saved_data["zero"].toInt(), ctx->saved_data["unit"].toInt(),
                      ctx->saved_data["gather_forward"].toInt() == 0);
    return {grads[0], torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

ZeroSharding::ZeroSharding(torchrt::Distributed& dist, const std::vector<torch::Tensor>& params,
                           const std::vector<bool>& decays, int stage, std::int64_t bucket_bytes,
                           const std::vector<torch::nn::Module*>& blocks)
    : dist_(dist), stage_(stage), params_(params) {
  if (stage < 1 || stage > 3) throw std::invalid_argument("ZeRO stage must be 1, 2 or 3");
  torch::NoGradGuard no_grad;
  unit_of_.resize(params.size());
  offset_of_.resize(params.size());
  for (const auto& p : params) {
    if (!p.is_non_overlapping_and_dense())
      throw std::invalid_argument("ZeRO packs parameters into flat units; one is not dense in memory");
    sizes_.push_back(p.sizes().vec());
    strides_.push_back(p.strides().vec());
  }
  std::vector<char> in_block(params.size(), 0);
  if (stage == 3) {
    std::map<const c10::TensorImpl*, std::size_t> index;
    for (std::size_t k = 0; k < params.size(); ++k) index[params[k].unsafeGetTensorImpl()] = k;
    // Backward finishes the last block first: the units go in that order.
    for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) {
      std::vector<std::size_t> members;
      for (const auto& p : (*b)->parameters()) {
        auto it = index.find(p.unsafeGetTensorImpl());
        if (it == index.end() || in_block[it->second]) continue;
        in_block[it->second] = 1;
        members.push_back(it->second);
      }
      if (members.empty()) continue;
      unit_of_block_[*b] = units_.size();
      add_unit(members, /*sharded=*/true, decays);
    }
  }
  std::vector<torch::Tensor> rest;
  std::vector<std::size_t> rest_index;
  for (std::size_t k = 0; k < params.size(); ++k)
    if (!in_block[k]) {
      rest.push_back(params[k]);
      rest_index.push_back(k);
    }
  for (const auto& bucket : torchrt::plan_buckets(rest, bucket_bytes)) {
    std::vector<std::size_t> members;
    for (std::size_t i : bucket) members.push_back(rest_index[i]);
    add_unit(members, /*sharded=*/false, decays);
  }
  arrived_.assign(params.size(), 0);
  for (std::size_t k = 0; k < params.size(); ++k) {
    auto accumulator = torch::autograd::impl::grad_accumulator(params[k]);
    accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, k](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          on_gradient(k);
          return outputs;
        }));
    accumulators_.push_back(std::move(accumulator));
  }
  // Only now: the accumulators took the parameters' full shapes as the gradients' expected ones.
  release_all();
}

void ZeroSharding::add_unit(const std::vector<std::size_t>& members, bool sharded, const std::vector<bool>& decays) {
  const std::int64_t world = dist_.world_size(), rank = dist_.rank();
  auto unit = std::make_unique<Unit>();
  std::int64_t numel = 0;
  for (std::size_t k : members) {
    unit_of_[k] = units_.size();
    offset_of_[k] = numel;
    numel += params_[k].numel();
  }
  unit->params = members;
  unit->sharded = sharded;
  unit->share = (numel + world - 1) / world;
  unit->padded = unit->share * world;
  const auto options = params_[members[0]].options().requires_grad(false);
  unit->flat = torch::zeros({unit->padded}, options);
  if (stage_ == 1) unit->grad = torch::zeros({unit->padded}, options);
  unit->grad_share = torch::zeros({unit->share}, options);
  for (std::size_t k : members) {
    auto p = params_[k];
    auto view = view_in(unit->flat, offset_of_[k], sizes_[k], strides_[k]);
    view.copy_(p.detach());
    p.set_data(view);
    // Stage 1 accumulates into the unit; stages 2 and 3 let autograd make each gradient and drop it.
    p.mutable_grad() = stage_ == 1 ? view_in(unit->grad, offset_of_[k], sizes_[k], strides_[k]) : torch::Tensor();
  }
  const std::int64_t lo = rank * unit->share, hi = lo + unit->share;
  // What the optimizer steps: views of the unit, or of the kept share when the unit is sharded.
  torch::Tensor values = unit->flat;
  std::int64_t base = 0;
  if (sharded) {
    unit->values_share = unit->flat.narrow(0, lo, unit->share).clone();
    values = unit->values_share;
    base = lo;
  }
  // This rank's share, cut where the weight-decay choice changes.
  std::int64_t seg_start = -1, seg_end = -1;
  bool seg_decay = false;
  auto close = [&] {
    if (seg_start < 0) return;
    auto share = values.narrow(0, seg_start - base, seg_end - seg_start);
    share.mutable_grad() = unit->grad_share.narrow(0, seg_start - lo, seg_end - seg_start);
    (seg_decay ? decay_shares_ : no_decay_shares_).push_back(share);
    seg_start = -1;
  };
  for (std::size_t k : members) {
    const std::int64_t a = std::max(lo, offset_of_[k]), b = std::min(hi, offset_of_[k] + params_[k].numel());
    if (a >= b) continue;
    if (seg_start >= 0 && (decays[k] != seg_decay || a != seg_end)) close();
    if (seg_start < 0) {
      seg_start = a;
      seg_decay = decays[k];
    }
    seg_end = b;
  }
  close();
  units_.push_back(std::move(unit));
}

void ZeroSharding::gather(std::size_t u) {
  Unit& unit = *units_[u];
  if (!unit.sharded || unit.flat.defined()) return;
  torch::NoGradGuard no_grad;
  unit.flat = torch::empty({unit.padded}, unit.values_share.options());
  dist_.start_all_gather(unit.flat, unit.values_share)();
  for (std::size_t k : unit.params) params_[k].set_data(view_in(unit.flat, offset_of_[k], sizes_[k], strides_[k]));
}

void ZeroSharding::release(std::size_t u) {
  Unit& unit = *units_[u];
  if (!unit.sharded || !unit.flat.defined()) return;
  torch::NoGradGuard no_grad;
  // The parameters keep their autograd identity; their values go until the next gather.
  for (std::size_t k : unit.params) params_[k].set_data(torch::empty({0}, unit.values_share.options()));
  unit.flat = torch::Tensor();
}

void ZeroSharding::gather_all() {
  for (std::size_t u = 0; u < units_.size(); ++u) gather(u);
}

void ZeroSharding::release_all() {
  for (std::size_t u = 0; u < units_.size(); ++u) release(u);
}

torch::Tensor ZeroSharding::run(torch::nn::Module& block, const BlockFunction& forward, const torch::Tensor& x) {
  const auto it = unit_of_block_.find(&block);
  if (it == unit_of_block_.end()) return forward(x);
  const auto self = reinterpret_cast<std::int64_t>(this);
  const auto unit = static_cast<std::int64_t>(it->second);
  const auto y = forward(BlockEdge::apply(x, self, unit, /*gather_forward=*/1));
  return BlockEdge::apply(y, self, unit, /*gather_forward=*/0);
}

ZeroSharding::~ZeroSharding() = default;

std::vector<torch::Tensor> ZeroSharding::all_shares() const {
  auto all = decay_shares_;
  all.insert(all.end(), no_decay_shares_.begin(), no_decay_shares_.end());
  return all;
}

void ZeroSharding::begin_backward(bool last) {
  std::lock_guard<std::mutex> lock(mutex_);
  sending_ = stage_ >= 2 || last;
  if (!sending_) return;
  std::fill(arrived_.begin(), arrived_.end(), 0);
  for (auto& u : units_) u->missing = static_cast<int>(u->params.size());
  next_launch_ = 0;
}

void ZeroSharding::on_gradient(std::size_t k) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!sending_) return;  // stage 1 between sends: the gradient accumulated in its unit
  if (arrived_[k])
    throw std::runtime_error(
        "ZeRO: a parameter received gradients from two backward passes of one micro-batch (a parameter shared "
        "between a checkpointed block and the rest of the model?); its unit was already sent. Turn "
        "activation_checkpointing or zero_stage off");
  arrived_[k] = 1;
  Unit& u = *units_[unit_of_[k]];
  if (stage_ >= 2) {
    torch::NoGradGuard no_grad;
    auto& p = params_[k];
    if (!u.grad.defined()) u.grad = torch::zeros({u.padded}, u.grad_share.options());
    view_in(u.grad, offset_of_[k], sizes_[k], strides_[k]).copy_(p.grad());
    p.mutable_grad() = torch::Tensor();  // the full gradient goes now: only the shares are kept
  }
  if (--u.missing == 0) launch_ready();
}

// Units start strictly in order, the same on every rank.
void ZeroSharding::launch_ready() {
  while (next_launch_ < units_.size() && units_[next_launch_]->missing == 0) {
    Unit& u = *units_[next_launch_];
    if (!u.reduced.defined()) u.reduced = torch::empty({u.share}, u.grad_share.options());
    u.wait = dist_.start_reduce_scatter_sum(u.reduced, u.grad);
    if (stage_ >= 2) u.grad = torch::Tensor();  // the collective keeps it until it is done
    // The unit before has had a unit's backward to finish in: collect it, so at most two
    // buffers are in flight.
    if (next_launch_ > 0) finish_unit(next_launch_ - 1);
    ++next_launch_;
  }
}

void ZeroSharding::finish_unit(std::size_t index) {
  Unit& u = *units_[index];
  if (!u.wait) return;
  u.wait();
  u.wait = nullptr;
  torch::NoGradGuard no_grad;
  u.grad_share.add_(u.reduced, 1.0 / dist_.world_size());
}

void ZeroSharding::end_backward() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!sending_) return;
  torch::NoGradGuard no_grad;
  // Parameters this backward did not reach take part as zeros (stage 1: as what they accumulated).
  for (std::size_t k = 0; k < params_.size(); ++k) {
    if (arrived_[k]) continue;
    arrived_[k] = 1;
    Unit& u = *units_[unit_of_[k]];
    if (stage_ >= 2 && !u.grad.defined()) u.grad = torch::zeros({u.padded}, u.grad_share.options());
    --u.missing;
  }
  launch_ready();
  for (std::size_t u = 0; u < units_.size(); ++u) finish_unit(u);
}

void ZeroSharding::zero_grad() {
  torch::NoGradGuard no_grad;
  for (auto& u : units_) {
    u->grad_share.zero_();
    if (stage_ == 1) u->grad.zero_();
  }
}

void ZeroSharding::gather_parameters() {
  torch::NoGradGuard no_grad;
  const std::int64_t rank = dist_.rank();
  std::vector<torch::Tensor> inputs;
  std::vector<std::function<void()>> waits;
  for (auto& u : units_) {
    if (u->sharded) continue;  // its block gathers it when it next runs
    inputs.push_back(u->flat.narrow(0, rank * u->share, u->share).clone());
    waits.push_back(dist_.start_all_gather(u->flat, inputs.back()));
  }
  for (auto& wait : waits) wait();
}

torch::Tensor ZeroSharding::gradient_norm() {
  std::vector<torch::Tensor> squares;
  for (const auto& u : units_) squares.push_back(u->grad_share.to(torch::kFloat).square().sum());
  auto total = torch::stack(squares).sum().reshape({1});
  dist_.all_reduce_sum(total);
  return total.sqrt().reshape({});
}

std::int64_t ZeroSharding::owned_elements() const {
  std::int64_t n = 0;
  for (const auto& u : units_) n += u->share;
  return n;
}

std::int64_t ZeroSharding::total_elements() const {
  std::int64_t n = 0;
  for (const auto& p : params_) n += p.numel();
  return n;
}

std::size_t ZeroSharding::unit_count() const {
  return units_.size();
}

}  // namespace xpuperf::parallel
