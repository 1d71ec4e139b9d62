#pragma once
// Data parallelism across processes: rendezvous through a TCPStore, a Gloo (CPU) or NCCL (CUDA)
// process group, parameter broadcast and bucketed gradient all-reduce (there is no C++
// DistributedDataParallel).

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "xpuperf/core/rank_env.h"

namespace xpuperf::train {

class DistributedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DistributedOptions {
  std::string backend = "auto";                                // auto (nccl on CUDA, gloo on CPU), gloo, nccl
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};  // rendezvous and collectives
  std::int64_t bucket_bytes = 25 << 20;                        // gradient bucket size
};

class Distributed {
 public:
  // World size 1 needs no process group; every call below is then a no-op. Throws
  // DistributedError with what to check when the store or the peers cannot be reached.
  static std::unique_ptr<Distributed> create(const RankEnv& env, torch::Device device,
                                             const DistributedOptions& options);
  virtual ~Distributed() = default;
  // Whether this build has the backend ("gloo", "nccl").
  static bool has_backend(const std::string& name);

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  const std::string& backend() const { return backend_; }

  // Rank 0's values everywhere, so all ranks start from the same model.
  void broadcast_parameters(const std::vector<torch::Tensor>& params);
  // Averages the gradients over ranks, in buckets of `bucket_bytes` launched together.
  void average_gradients(const std::vector<torch::Tensor>& params);
  // Sums in place over ranks.
  void all_reduce_sum(torch::Tensor& tensor);
  // Max in place over ranks.
  void all_reduce_max(torch::Tensor& tensor);
  void barrier();

  // How many buckets the last average_gradients used (for tests and logs).
  int last_bucket_count() const { return last_buckets_; }

  struct Collectives;  // the process group's calls (distributed.cpp)

 protected:
  Distributed(const RankEnv& env, DistributedOptions options) : env_(env), options_(std::move(options)) {}

  RankEnv env_;
  DistributedOptions options_;
  std::string backend_ = "none";
  std::shared_ptr<Collectives> collectives_;
  int last_buckets_ = 0;
};

// Groups tensors (by dtype and device, in reverse order, at most `bucket_bytes` each) for
// bucketed collectives. Returns index lists into `tensors`.
std::vector<std::vector<std::size_t>> plan_buckets(const std::vector<torch::Tensor>& tensors,
                                                   std::int64_t bucket_bytes);

}  // namespace xpuperf::train
