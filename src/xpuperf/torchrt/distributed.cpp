#include "xpuperf/torchrt/distributed.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef XPUPERF_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

#include <torch/version.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <type_traits>

#include "xpuperf/core/log.h"
#include "xpuperf/torchrt/collective_group.h"
#include "xpuperf/torchrt/vendor_registry.h"
#include "xpuperf/torchrt/vendor_runtime.h"

namespace xpuperf::torchrt {

struct Distributed::Rendezvous {
  c10::intrusive_ptr<c10d::Store> store;
};

namespace {

#ifdef XPUPERF_HAVE_GLOO
std::shared_ptr<::gloo::transport::Device> gloo_device(const RankEnv& env) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  // On one host, loopback always works; across hosts, the node's address as the plan names it
  // (set by the node agent), else the address this host's name resolves to.
  if (env.world_size == env.local_world_size) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  if (const char* addr = std::getenv("XPUPERF_NODE_ADDR"); addr && *addr)
    return c10d::ProcessGroupGloo::createDeviceForHostname(addr);
  return c10d::ProcessGroupGloo::createDefaultDevice();
}
#endif

// A process group of `size` ranks over `store`, this one being `rank` of them.
std::shared_ptr<Distributed::Collectives> make_collectives(const std::string& backend,
                                                           const c10::intrusive_ptr<c10d::Store>& store,
                                                           const RankEnv& env, int rank, int size,
                                                           const DistributedOptions& options) {
  const CollectiveContext context{store, env, rank, size, options.timeout};
  if (backend == "gloo") return make_gloo_group(context);
  const CollectiveFactory* factory = find_collective_backend(backend);
  if (!factory && backend == "nccl")
    throw DistributedError(
        "this build of xpuperf has no NCCL (NVIDIA's plug-in registers it where LibTorch has CUDA "
        "and NCCL); use dist_backend: gloo");
  if (!factory) throw DistributedError("no collective backend '" + backend + "' (neither LibTorch's nor a plug-in's)");
  return (*factory)(context);
}

std::string where(const RankEnv& env) {
  return env.master_addr + ":" + std::to_string(env.master_port);
}

// The type a bucket of gradients of type `type` is summed in.
torch::ScalarType sum_type(torch::ScalarType type, const DistributedOptions& options) {
  const bool low = type == torch::kBFloat16 || type == torch::kHalf;
  return low && options.sum_low_precision_in_fp32 ? torch::kFloat : type;
}

}  // namespace

std::shared_ptr<CollectiveGroup> make_gloo_group(const CollectiveContext& context) {
#ifdef XPUPERF_HAVE_GLOO
  auto gloo_options = c10d::ProcessGroupGloo::Options::create(context.timeout);
  gloo_options->devices.push_back(gloo_device(context.env));
  gloo_options->threads = 2;
  auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(context.store, context.rank, context.size, gloo_options);
  return std::make_shared<ProcessGroupCollectives<c10d::ProcessGroupGloo>>(group);
#else
  (void)context;
  throw DistributedError("this build of xpuperf has no Gloo (its headers were missing); use dist_backend: nccl");
#endif
}

bool Distributed::has_backend(const std::string& name) {
#ifdef XPUPERF_HAVE_GLOO
  if (name == "gloo") return true;
#endif
  return find_collective_backend(name) != nullptr;
}

std::vector<std::vector<std::size_t>> plan_buckets(const std::vector<torch::Tensor>& tensors,
                                                   std::int64_t bucket_bytes) {
  std::vector<std::vector<std::size_t>> buckets;
  std::vector<std::size_t> current;
  std::int64_t current_bytes = 0;
  // Reverse order: the last layers' gradients are ready first in backward.
  for (std::size_t k = tensors.size(); k-- > 0;) {
    const auto& t = tensors[k];
    const std::int64_t bytes = t.numel() * static_cast<std::int64_t>(t.element_size());
    const bool compatible = current.empty() || (tensors[current[0]].scalar_type() == t.scalar_type() &&
                                                tensors[current[0]].device() == t.device());
    if (!current.empty() && (!compatible || current_bytes + bytes > bucket_bytes)) {
      buckets.push_back(std::move(current));
      current.clear();
      current_bytes = 0;
    }
    current.push_back(k);
    current_bytes += bytes;
  }
  if (!current.empty()) buckets.push_back(std::move(current));
  return buckets;
}

std::unique_ptr<Distributed> Distributed::create(const RankEnv& env, torch::Device device,
                                                 const DistributedOptions& options) {
  std::unique_ptr<Distributed> dist(new Distributed(env, options));
  if (env.world_size == 1) return dist;

  std::string backend = options.backend;
  const ActiveVendor* vendor = active_vendor();
  if (backend == "auto")
    backend = device.is_cuda()                                          ? "nccl"
              : device.type() == c10::DeviceType::PrivateUse1 && vendor ? vendor->spec.collective_backend
                                                                        : "gloo";
  if (backend != "gloo" && backend != "nccl" && !find_collective_backend(backend)) {
    std::string known = "auto, gloo, nccl";
    for (const auto& name : registered_collective_backends()) known += ", " + name;
    throw DistributedError("'dist_backend' must be one of " + known + ", got '" + backend + "'");
  }
  if (backend == "nccl" && !device.is_cuda())
    throw DistributedError("the nccl backend needs CUDA devices; use gloo on the CPU");

  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(env.master_port);
  store_options.isServer = env.rank == 0;
  store_options.numWorkers = static_cast<std::size_t>(env.world_size);
  store_options.waitWorkers = false;
  store_options.timeout = options.timeout;
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
  } catch (const std::exception& e) {
    const std::string secs = std::to_string(options.timeout.count() / 1000);
    if (env.rank == 0)
      throw DistributedError("rank 0 cannot serve the rendezvous store on " + where(env) +
                             " (port in use? set master_port to a free port): " + e.what());
    throw DistributedError("rank " + std::to_string(env.rank) + " cannot reach the rendezvous store at " + where(env) +
                           " within " + secs + " s: is rank 0 running, and are MASTER_ADDR/MASTER_PORT right? (" +
                           e.what() + ")");
  }

  try {
    dist->collectives_ = make_collectives(backend, store, env, env.rank, env.world_size, options);
  } catch (const DistributedError&) {
    throw;
  } catch (const std::exception& e) {
    throw DistributedError("rank " + std::to_string(env.rank) + " could not join the " + backend + " group of " +
                           std::to_string(env.world_size) + " ranks through " + where(env) +
                           " (did every rank start?): " + e.what());
  }
  dist->backend_ = backend;
  dist->rendezvous_ = std::make_shared<Rendezvous>(Rendezvous{store});
  return dist;
}

std::unique_ptr<Distributed> Distributed::subgroup(const std::string& name, const std::vector<int>& ranks) const {
  const auto me = std::find(ranks.begin(), ranks.end(), env_.rank);
  if (me == ranks.end())
    throw DistributedError("rank " + std::to_string(env_.rank) + " is not in its own group " + name);
  RankEnv env = env_;
  env.rank = static_cast<int>(me - ranks.begin());
  env.world_size = static_cast<int>(ranks.size());
  std::unique_ptr<Distributed> group(new Distributed(env, options_));
  if (ranks.size() == 1 || !rendezvous_) return group;  // alone: every call a no-op
  auto store = c10::make_intrusive<c10d::PrefixStore>(name, rendezvous_->store);
  try {
    group->collectives_ = make_collectives(backend_, store, env_, env.rank, env.world_size, options_);
  } catch (const std::exception& e) {
    throw DistributedError("rank " + std::to_string(env_.rank) + " could not form the group " + name + ": " + e.what());
  }
  group->backend_ = backend_;
  group->rendezvous_ = rendezvous_;
  return group;
}

void Distributed::broadcast_parameters(const std::vector<torch::Tensor>& params) {
  if (!collectives_) return;
  torch::NoGradGuard no_grad;
  for (const auto& bucket : plan_buckets(params, options_.bucket_bytes)) {
    std::vector<torch::Tensor> flat_parts;
    for (std::size_t k : bucket) flat_parts.push_back(params[k].detach().reshape(-1));
    std::vector<at::Tensor> flat{torch::cat(flat_parts)};
    collectives_->broadcast(flat)->wait();
    std::int64_t offset = 0;
    for (std::size_t k : bucket) {
      const auto n = params[k].numel();
      params[k].detach().copy_(flat[0].slice(0, offset, offset + n).view_as(params[k]));
      offset += n;
    }
  }
}

void Distributed::average_gradients(const std::vector<torch::Tensor>& params) {
  if (!collectives_) return;
  torch::NoGradGuard no_grad;
  // A parameter the step did not use has no gradient: it takes part as zeros, so every rank
  // sends the same buckets.
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad());
  }
  const auto buckets = plan_buckets(grads, options_.bucket_bytes);
  std::vector<std::vector<at::Tensor>> flats(buckets.size());
  std::vector<c10::intrusive_ptr<c10d::Work>> work(buckets.size());
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    std::vector<torch::Tensor> parts;
    for (std::size_t k : buckets[b]) parts.push_back(grads[k].reshape(-1));
    const auto type = sum_type(parts[0].scalar_type(), options_);
    flats[b] = {type == parts[0].scalar_type() ? torch::cat(parts) : torch::cat(parts).to(type)};
    work[b] = collectives_->allreduce(flats[b], c10d::ReduceOp::SUM);  // all buckets in flight at once
  }
  const double inv_world = 1.0 / env_.world_size;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    work[b]->wait();
    auto& flat = flats[b][0];
    flat.mul_(inv_world);
    std::int64_t offset = 0;
    for (std::size_t k : buckets[b]) {
      const auto n = grads[k].numel();
      grads[k].copy_(flat.slice(0, offset, offset + n).view_as(grads[k]));
      offset += n;
    }
  }
  last_buckets_ = static_cast<int>(buckets.size());
}

// The state of overlapped gradient reduction (attach_gradient_hooks).
struct Distributed::Reducer {
  std::vector<torch::Tensor> params;
  std::vector<std::vector<std::size_t>> buckets;
  std::vector<std::size_t> bucket_of;                // per parameter
  std::vector<std::int64_t> offset_of;               // per parameter, in its bucket's flat buffer
  std::vector<torch::Tensor> flats;                  // per bucket, allocated once
  std::vector<int> missing;                          // per bucket: gradients not yet arrived this step
  std::vector<char> arrived;                         // per parameter
  std::vector<c10::intrusive_ptr<c10d::Work>> work;  // per bucket, this step
  std::size_t next_launch = 0;                       // buckets start strictly in order
  bool enabled = true;
  bool reducing = true;      // false for the micro-batches whose gradients only accumulate
  bool accumulated = false;  // .grad holds earlier micro-batches' sums, to send with this one's
  bool arrived_twice = false;
  std::mutex mutex;                                    // hooks may run on autograd's device threads
  std::function<void(const ReducedBucket&)> consumer;  // on_bucket_started's

  // Starts every full bucket from `next_launch` on, in order.
  void launch_ready(Collectives& collectives) {
    while (next_launch < buckets.size() && missing[next_launch] == 0) {
      std::vector<at::Tensor> t{flats[next_launch]};
      auto started = collectives.allreduce(t, c10d::ReduceOp::SUM);
      work[next_launch] = started;
      if (consumer) {
        ReducedBucket bucket;
        for (std::size_t k : buckets[next_launch])
          bucket.parts.emplace_back(params[k],
                                    flats[next_launch].slice(0, offset_of[k], offset_of[k] + params[k].numel()));
        bucket.wait = [started] { started->wait(); };
        consumer(bucket);
      }
      ++next_launch;
    }
  }
};

void Distributed::attach_gradient_hooks(const std::vector<torch::Tensor>& params) {
  if (!collectives_) return;
  auto r = std::make_shared<Reducer>();
  r->params = params;
  r->buckets = plan_buckets(params, options_.bucket_bytes);
  r->bucket_of.resize(params.size());
  r->offset_of.resize(params.size());
  for (std::size_t b = 0; b < r->buckets.size(); ++b) {
    std::int64_t offset = 0;
    for (std::size_t k : r->buckets[b]) {
      r->bucket_of[k] = b;
      r->offset_of[k] = offset;
      offset += params[k].numel();
    }
    const auto& first = params[r->buckets[b][0]];
    r->flats.push_back(
        torch::zeros({offset}, first.options().dtype(sum_type(first.scalar_type(), options_)).requires_grad(false)));
  }
  r->work.resize(r->buckets.size());
  r->arrived.assign(params.size(), 0);
  r->missing.assign(r->buckets.size(), 0);
  std::weak_ptr<Reducer> weak = r;
  std::shared_ptr<Collectives> collectives = collectives_;
  for (std::size_t k = 0; k < params.size(); ++k) {
    params[k].register_hook([weak, collectives, k](const torch::Tensor& grad) {
      auto reducer = weak.lock();
      if (!reducer) return;
      std::lock_guard<std::mutex> lock(reducer->mutex);
      if (!reducer->enabled || !reducer->reducing) return;
      if (reducer->arrived[k]) {
        reducer->arrived_twice = true;
        return;
      }
      reducer->arrived[k] = 1;
      const std::size_t b = reducer->bucket_of[k];
      const std::int64_t offset = reducer->offset_of[k];
      torch::NoGradGuard no_grad;
      auto slot = reducer->flats[b].slice(0, offset, offset + grad.numel());
      // The hook sees this backward's gradient; .grad still holds the earlier micro-batches'.
      const auto& earlier = reducer->params[k].grad();
      if (!reducer->accumulated || !earlier.defined()) {
        slot.copy_(grad.reshape(-1));
      } else if (slot.scalar_type() == grad.scalar_type()) {
        torch::add_out(slot, grad.reshape(-1), earlier.reshape(-1));
      } else {  // summed in the bucket's wider type
        slot.copy_(grad.reshape(-1));
        slot.add_(earlier.reshape(-1));
      }
      if (--reducer->missing[b] == 0) reducer->launch_ready(*collectives);
    });
  }
  reducer_ = r;
}

bool Distributed::overlapping() const {
  return reducer_ && reducer_->enabled;
}

void Distributed::on_bucket_started(std::function<void(const ReducedBucket&)> consumer) {
  if (!reducer_) return;
  std::lock_guard<std::mutex> lock(reducer_->mutex);
  reducer_->consumer = std::move(consumer);
}

void Distributed::begin_step(bool reduce) {
  if (!overlapping()) return;
  std::lock_guard<std::mutex> lock(reducer_->mutex);
  Reducer& r = *reducer_;
  r.accumulated = !r.reducing;  // the micro-batch before this one only accumulated
  r.reducing = reduce;
  if (!reduce) return;
  std::fill(r.arrived.begin(), r.arrived.end(), 0);
  for (std::size_t b = 0; b < r.buckets.size(); ++b) {
    r.missing[b] = static_cast<int>(r.buckets[b].size());
    r.work[b].reset();
  }
  r.next_launch = 0;
}

void Distributed::finish_step(const std::vector<torch::Tensor>& params) {
  if (!reducer_ || !reducer_->enabled) return average_gradients(params);
  Reducer& r = *reducer_;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    torch::NoGradGuard no_grad;
    // Parameters the step did not use sent no gradient: they take part as zeros.
    for (std::size_t k = 0; k < r.params.size(); ++k) {
      if (r.arrived[k]) continue;
      const std::size_t b = r.bucket_of[k];
      r.flats[b].slice(0, r.offset_of[k], r.offset_of[k] + r.params[k].numel()).zero_();
      r.arrived[k] = 1;
      --r.missing[b];
    }
    r.launch_ready(*collectives_);
  }
  for (auto& w : r.work)
    if (w) w->wait();
  if (r.arrived_twice) {
    // The early copies missed later contributions; the accumulated .grad is complete, so
    // reduce from it. Every rank runs the same graph, so every rank takes this path.
    r.enabled = false;
    log::warning(
        "a parameter received gradients from two backward passes in one step; gradient all-reduce no "
        "longer overlaps with backward");
    return average_gradients(r.params);
  }
  const double inv_world = 1.0 / env_.world_size;
  torch::NoGradGuard no_grad;
  for (std::size_t b = 0; b < r.buckets.size(); ++b) {
    // With a consumer the bucket keeps the sum (it may still be reading it): each gradient is then
    // its slice divided apart, with the same arithmetic (in the bucket's type, rounded once to the
    // gradient's).
    if (!r.consumer) r.flats[b].mul_(inv_world);
    for (std::size_t k : r.buckets[b]) {
      auto& p = r.params[k];
      auto slice = r.flats[b].slice(0, r.offset_of[k], r.offset_of[k] + p.numel()).view_as(p);
      if (r.consumer) slice = slice * inv_world;
      if (!p.grad().defined())
        p.mutable_grad() = slice.to(p.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
      else
        p.mutable_grad().copy_(slice);
    }
  }
  last_buckets_ = static_cast<int>(r.buckets.size());
}

std::function<void()> Distributed::start_reduce_scatter_sum(torch::Tensor out, torch::Tensor in) {
  if (!collectives_) {
    out.copy_(in);
    return [] {};
  }
  // Gloo may lack a reduce-scatter (LibTorch 1.13's has none); NCCL and the plug-ins' backends have one.
  if (backend_ != "gloo") {
    auto work = collectives_->reduce_scatter(out, in);
    return [work] { work->wait(); };
  }
  std::vector<at::Tensor> t{widens(in) ? in.to(torch::kFloat) : in};
  auto work = collectives_->allreduce(t, c10d::ReduceOp::SUM);
  const std::int64_t share = out.numel();
  const int rank = env_.rank;
  return [work, out, sum = t[0], share, rank]() mutable {
    work->wait();
    out.copy_(sum.narrow(0, rank * share, share));
  };
}

std::function<void()> Distributed::start_all_gather(torch::Tensor out, torch::Tensor in) {
  if (!collectives_) {
    out.copy_(in);
    return [] {};
  }
  if (widens(in)) {
    auto wide_in = in.to(torch::kFloat), wide_out = torch::empty(out.sizes(), wide_in.options());
    auto work = collectives_->all_gather(wide_out, wide_in);
    return [work, out, wide_in, wide_out]() mutable {
      work->wait();
      out.copy_(wide_out);
    };
  }
  auto work = collectives_->all_gather(out, in);
  return [work] { work->wait(); };
}

std::function<void()> Distributed::start_all_reduce_sum(torch::Tensor tensor) {
  if (!collectives_) return [] {};
  std::vector<at::Tensor> t{widens(tensor) ? tensor.to(torch::kFloat) : tensor};
  auto work = collectives_->allreduce(t, c10d::ReduceOp::SUM);
  // Gloo's work does not keep the tensor alive.
  return [work, tensor, sum = t[0]]() mutable {
    work->wait();
    if (!sum.is_same(tensor)) tensor.copy_(sum);
  };
}

std::function<void()> Distributed::start_send(torch::Tensor tensor, int to) {
  if (!collectives_) throw DistributedError("send: this group has one rank");
  std::vector<at::Tensor> t{tensor};
  auto work = collectives_->send(t, to);
  return [work, tensor] { work->wait(); };  // Gloo's work does not keep the tensor alive
}

std::function<void()> Distributed::start_recv(torch::Tensor tensor, int from) {
  if (!collectives_) throw DistributedError("recv: this group has one rank");
  std::vector<at::Tensor> t{tensor};
  auto work = collectives_->recv(t, from);
  return [work, tensor] { work->wait(); };
}

void Distributed::all_reduce_sum(torch::Tensor& tensor) {
  start_all_reduce_sum(tensor)();
}

void Distributed::all_reduce_max(torch::Tensor& tensor) {
  if (!collectives_) return;
  std::vector<at::Tensor> t{tensor};
  collectives_->allreduce(t, c10d::ReduceOp::MAX)->wait();
}

void Distributed::barrier() {
  if (collectives_) collectives_->barrier()->wait();
}

void Distributed::all_gather(torch::Tensor& out, torch::Tensor& in) {
  start_all_gather(out, in)();
}

void Distributed::reduce_scatter_sum(torch::Tensor& out, torch::Tensor& in) {
  if (!collectives_) {
    out.copy_(in);
    return;
  }
  if (backend_ == "gloo") return start_reduce_scatter_sum(out, in.clone())();  // keeps `in` as it was
  collectives_->reduce_scatter(out, in)->wait();
}

void Distributed::all_to_all(torch::Tensor& out, torch::Tensor& in) {
  if (!collectives_) {
    out.copy_(in);
    return;
  }
  if (widens(in)) {
    auto wide_in = in.to(torch::kFloat), wide_out = torch::empty_like(wide_in);
    collectives_->all_to_all(wide_out, wide_in)->wait();
    out.copy_(wide_out);
    return;
  }
  collectives_->all_to_all(out, in)->wait();
}

}  // namespace xpuperf::torchrt
