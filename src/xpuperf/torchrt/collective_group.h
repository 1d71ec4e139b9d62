#pragma once
// The collective calls xpuperf makes, over whichever process group backs them: LibTorch's Gloo or
// NCCL, or one a vendor's plug-in registers by name (HCCL, CNCL, MCCL, the simulated device's).
// Included by distributed.cpp and by plug-ins, not by the layers above.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "xpuperf/core/rank_env.h"

namespace xpuperf::torchrt {

// What a group does; each call starts the work and returns it to wait for.
class CollectiveGroup {
 public:
  virtual ~CollectiveGroup() = default;
  virtual c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& t, c10d::ReduceOp op) = 0;
  virtual c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& t) = 0;
  virtual c10::intrusive_ptr<c10d::Work> barrier() = 0;
  // out = every rank's `in` in rank order.
  virtual c10::intrusive_ptr<c10d::Work> all_gather(at::Tensor& out, at::Tensor& in) = 0;
  // out = this rank's share of the sum over ranks of `in`.
  virtual c10::intrusive_ptr<c10d::Work> reduce_scatter(at::Tensor& out, at::Tensor& in) = 0;
  // Chunk j of `in` goes to rank j; chunk j of `out` comes from rank j.
  virtual c10::intrusive_ptr<c10d::Work> all_to_all(at::Tensor& out, at::Tensor& in) = 0;
  virtual c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& t, int to) = 0;
  virtual c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& t, int from) = 0;
};

// What a backend needs to form a group: the rendezvous store, this rank and the group's size.
struct CollectiveContext {
  c10::intrusive_ptr<c10d::Store> store;
  RankEnv env;  // the world's (for the network address to use)
  int rank = 0;
  int size = 1;
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

using CollectiveFactory = std::function<std::shared_ptr<CollectiveGroup>(const CollectiveContext&)>;

// A Gloo group over host tensors: a plug-in whose device has no collective library of its own
// yet can stage its tensors through the host and this group. Throws when the build has no Gloo.
std::shared_ptr<CollectiveGroup> make_gloo_group(const CollectiveContext& context);

// Any c10d process group (ProcessGroupNCCL, ProcessGroupGloo, a vendor's ProcessGroupHCCL) as a
// CollectiveGroup: LibTorch 1.13 and 2.x differ in the groups' base class, not in these methods.
template <typename Group>
class ProcessGroupCollectives : public CollectiveGroup {
 public:
  explicit ProcessGroupCollectives(c10::intrusive_ptr<Group> group) : group_(std::move(group)) {}
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& t, c10d::ReduceOp op) override {
    c10d::AllreduceOptions options;
    options.reduceOp = op;
    return group_->allreduce(t, options);
  }
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& t) override { return group_->broadcast(t); }
  c10::intrusive_ptr<c10d::Work> barrier() override { return group_->barrier(); }
  c10::intrusive_ptr<c10d::Work> all_gather(at::Tensor& out, at::Tensor& in) override {
    if (flat_all_gather_) {
      try {
        return group_->_allgather_base(out, in);
      } catch (const c10::Error&) {
        // Gloo (LibTorch 1.13) has only the list form: asked once, its error (with a backtrace) is
        // not paid on every call (sequence parallelism gathers a few times a layer).
        flat_all_gather_ = false;
      }
    }
    std::vector<std::vector<at::Tensor>> outs{out.chunk(group_->getSize())};
    std::vector<at::Tensor> ins{in};
    return group_->allgather(outs, ins);
  }
  c10::intrusive_ptr<c10d::Work> reduce_scatter(at::Tensor& out, at::Tensor& in) override {
    return group_->_reduce_scatter_base(out, in);
  }
  c10::intrusive_ptr<c10d::Work> all_to_all(at::Tensor& out, at::Tensor& in) override {
    std::vector<std::int64_t> even;  // empty: equal chunks
    return group_->alltoall_base(out, in, even, even);
  }
  // One tag: messages between two ranks arrive in the order they were sent.
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& t, int to) override { return group_->send(t, to, 0); }
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& t, int from) override {
    return group_->recv(t, from, 0);
  }

 protected:
  const c10::intrusive_ptr<Group>& group() const { return group_; }

 private:
  c10::intrusive_ptr<Group> group_;
  bool flat_all_gather_ = true;  // false once the group said it has only the list form
};

}  // namespace xpuperf::torchrt
