#pragma once
// Data parallelism across processes: rendezvous through a TCPStore, a Gloo (CPU) or NCCL (CUDA)
// process group, parameter broadcast and bucketed gradient all-reduce (there is no C++
// DistributedDataParallel).

#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "xpuperf/core/rank_env.h"

namespace xpuperf::torchrt {

class CollectiveGroup;  // collective_group.h

class DistributedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DistributedOptions {
  // auto (nccl on CUDA, the vendor's collective_backend on its device, gloo on the CPU), gloo, nccl,
  // or a backend the vendor's plug-in registered.
  std::string backend = "auto";
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};  // rendezvous and collectives
  std::int64_t bucket_bytes = 25 << 20;                        // gradient bucket size
  // bf16 and fp16 gradients summed over the ranks in fp32 buckets and rounded once as they are
  // copied back (bf16_weights), not rounded at each hop of the collective in their own type.
  bool sum_low_precision_in_fp32 = false;
};

// A bucket of the overlapped gradient reduction as its all-reduce starts: each parameter beside its
// part of the bucket's sum over the ranks (not yet divided by them), and `wait`, which makes the
// current CUDA stream (on the CPU: the caller) wait until the sum is there. The bucket keeps the
// sum until the next step's backward writes it again: whoever takes it must have read it by then.
struct ReducedBucket {
  std::vector<std::pair<torch::Tensor, torch::Tensor>> parts;  // (parameter, its slice of the sum)
  std::function<void()> wait;
};

class Distributed {
 public:
  // World size 1 needs no process group; every call below is then a no-op. Throws
  // DistributedError with what to check when the store or the peers cannot be reached.
  static std::unique_ptr<Distributed> create(const RankEnv& env, torch::Device device,
                                             const DistributedOptions& options);
  virtual ~Distributed() = default;
  // A group of some of the world's ranks (a tensor-parallel group, a data-parallel group), over the
  // same rendezvous store: the ranks listed call it with the same `name` and `ranks`, in the same
  // order; this rank must be among them. Its rank() is this rank's index in `ranks`.
  std::unique_ptr<Distributed> subgroup(const std::string& name, const std::vector<int>& ranks) const;
  // Whether this build or the vendor's plug-in has the backend ("gloo", "nccl", "hccl", ...).
  static bool has_backend(const std::string& name);

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  const std::string& backend() const { return backend_; }

  // Rank 0's values everywhere, so all ranks start from the same model.
  void broadcast_parameters(const std::vector<torch::Tensor>& params);
  // Averages the gradients over ranks, in buckets of `bucket_bytes` launched together, after
  // backward has finished.
  void average_gradients(const std::vector<torch::Tensor>& params);

  // The same, overlapped with backward: hooks copy each gradient into its bucket as autograd
  // produces it, and a bucket's all-reduce starts as soon as it is full (buckets start in the
  // same order on every rank). Call attach once, begin_step before each backward and
  // finish_step after it. (Autograd sums a parameter's gradients before its hook runs, so a
  // parameter used twice is fine.) A gradient that arrives twice in one step, from several
  // backward passes, cannot be reduced early: that step is redone with average_gradients and
  // overlap is turned off for the rest of the run.
  void attach_gradient_hooks(const std::vector<torch::Tensor>& params);
  // With gradient accumulation, every micro-batch but the last runs with `reduce` false: its
  // gradients only accumulate in .grad; the last one's hooks send the accumulated sums.
  void begin_step(bool reduce = true);
  // Leaves the averaged gradients in params' .grad (through average_gradients when no hooks
  // are attached or overlap was turned off).
  void finish_step(const std::vector<torch::Tensor>& params);
  bool overlapping() const;
  // Calls `consumer` with each bucket of the overlapped reduction as its all-reduce starts (on
  // autograd's threads, and in finish_step for the buckets left), for one that takes the sums as
  // they come: the offloaded optimizer streams them to the host. Empty: none. After
  // attach_gradient_hooks; without it (or with world size 1) no bucket starts.
  void on_bucket_started(std::function<void(const ReducedBucket&)> consumer);
  // Sums in place over ranks.
  void all_reduce_sum(torch::Tensor& tensor);
  // Max in place over ranks.
  void all_reduce_max(torch::Tensor& tensor);
  void barrier();
  // The other collectives, for the base cases (each waits for its work, as the others do):
  // out = every rank's `in` in rank order (out has world_size times in's elements).
  void all_gather(torch::Tensor& out, torch::Tensor& in);
  // out = this rank's share of the sum over ranks of `in` (in has world_size times out's elements).
  void reduce_scatter_sum(torch::Tensor& out, torch::Tensor& in);
  // Chunk j of `in` goes to rank j; chunk j of `out` comes from rank j.
  void all_to_all(torch::Tensor& out, torch::Tensor& in);

  // Started collectives, for ZeRO: each returns a call that waits for it. `in` may be used as
  // scratch and must stay alive until then; the caller keeps `out` and `in` alive.
  // out = this rank's share of the sum over ranks of `in` (NCCL's reduce-scatter; Gloo, which may
  // lack one, all-reduces `in` and copies the share).
  std::function<void()> start_reduce_scatter_sum(torch::Tensor out, torch::Tensor in);
  // out = every rank's `in` in rank order.
  std::function<void()> start_all_gather(torch::Tensor out, torch::Tensor in);
  // Sums `tensor` in place over ranks (for a sum that overlaps the work issued before its wait).
  std::function<void()> start_all_reduce_sum(torch::Tensor tensor);

  // Point to point, for pipeline stages: `tensor` to rank `to` / from rank `from` of this group,
  // in the order sent. Each returns a call that waits for it; the tensor must stay alive until then.
  std::function<void()> start_send(torch::Tensor tensor, int to);
  std::function<void()> start_recv(torch::Tensor tensor, int from);

  // How many buckets the last average_gradients used (for tests and logs).
  int last_bucket_count() const { return last_buckets_; }

  using Collectives = CollectiveGroup;  // the process group's calls

 protected:
  Distributed(const RankEnv& env, DistributedOptions options) : env_(env), options_(std::move(options)) {}

  // Whether `t` goes through the group as an fp32 copy: LibTorch 1.13's Gloo has no bf16 (its
  // all-reduce says "Invalid scalar type"), and bf16 → fp32 → bf16 is exact.
  bool widens(const torch::Tensor& t) const { return backend_ == "gloo" && t.scalar_type() == torch::kBFloat16; }

  RankEnv env_;
  DistributedOptions options_;
  std::string backend_ = "none";
  std::shared_ptr<Collectives> collectives_;
  struct Rendezvous;  // the store and device, for subgroups
  std::shared_ptr<Rendezvous> rendezvous_;
  struct Reducer;
  std::shared_ptr<Reducer> reducer_;
  int last_buckets_ = 0;
};

// Groups tensors (by dtype and device, in reverse order, at most `bucket_bytes` each) for
// bucketed collectives. Returns index lists into `tensors`.
std::vector<std::vector<std::size_t>> plan_buckets(const std::vector<torch::Tensor>& tensors,
                                                   std::int64_t bucket_bytes);

}  // namespace xpuperf::torchrt
