#include "sim_collectives.h"

#include <functional>

namespace xpuperf::sim {
namespace {

// A collective's work on the host copies: waiting for it copies the results back to the device.
class StagedWork : public c10d::Work {
 public:
  StagedWork(c10::intrusive_ptr<c10d::Work> host_work, std::function<void()> copy_back)
      : host_work_(std::move(host_work)), copy_back_(std::move(copy_back)) {}
  bool wait(std::chrono::milliseconds timeout) override {
    host_work_->wait(timeout);
    if (copy_back_) {
      copy_back_();
      copy_back_ = nullptr;
    }
    return true;
  }
  bool isCompleted() override { return !copy_back_; }

 private:
  c10::intrusive_ptr<c10d::Work> host_work_;
  std::function<void()> copy_back_;
};

std::vector<at::Tensor> to_host(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> host;
  for (const auto& t : tensors) host.push_back(t.cpu());
  return host;
}

// The sim device has no interconnect of its own: its collectives stage every tensor through the
// host and a Gloo group, as a vendor bringing up its collectives library might at first.
class SimCollectives : public torchrt::CollectiveGroup {
 public:
  SimCollectives(std::shared_ptr<torchrt::CollectiveGroup> host, int rank) : host_(std::move(host)), rank_(rank) {}

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& t, c10d::ReduceOp op) override {
    auto host = std::make_shared<std::vector<at::Tensor>>(to_host(t));
    return staged(host_->allreduce(*host, op), t, host);
  }
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& t) override {
    auto host = std::make_shared<std::vector<at::Tensor>>(to_host(t));
    return staged(host_->broadcast(*host), t, host);
  }
  c10::intrusive_ptr<c10d::Work> barrier() override { return host_->barrier(); }
  c10::intrusive_ptr<c10d::Work> all_gather(at::Tensor& out, at::Tensor& in) override {
    return one_out(out, in, [this](at::Tensor& o, at::Tensor& i) { return host_->all_gather(o, i); });
  }
  // Gloo has no reduce-scatter in every LibTorch: the sum of the whole input, of which this rank keeps its share.
  c10::intrusive_ptr<c10d::Work> reduce_scatter(at::Tensor& out, at::Tensor& in) override {
    auto host = std::make_shared<std::vector<at::Tensor>>(std::vector<at::Tensor>{in.cpu()});
    auto work = host_->allreduce(*host, c10d::ReduceOp::SUM);
    at::Tensor target = out;
    const std::int64_t share = out.numel(), rank = rank_;
    return c10::make_intrusive<StagedWork>(std::move(work), [target, host, share, rank]() mutable {
      target.copy_((*host)[0].reshape(-1).narrow(0, rank * share, share).view_as(target));
    });
  }
  c10::intrusive_ptr<c10d::Work> all_to_all(at::Tensor& out, at::Tensor& in) override {
    return one_out(out, in, [this](at::Tensor& o, at::Tensor& i) { return host_->all_to_all(o, i); });
  }
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& t, int to) override {
    auto host = std::make_shared<std::vector<at::Tensor>>(to_host(t));
    auto work = host_->send(*host, to);
    return c10::make_intrusive<StagedWork>(work, [host] {});  // keeps the host copy until sent
  }
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& t, int from) override {
    auto host = std::make_shared<std::vector<at::Tensor>>(to_host(t));
    return staged(host_->recv(*host, from), t, host);
  }

 private:
  static c10::intrusive_ptr<c10d::Work> staged(c10::intrusive_ptr<c10d::Work> work, std::vector<at::Tensor>& device,
                                               std::shared_ptr<std::vector<at::Tensor>> host) {
    std::vector<at::Tensor> targets = device;
    return c10::make_intrusive<StagedWork>(std::move(work), [targets, host]() mutable {
      for (std::size_t i = 0; i < targets.size(); ++i) targets[i].copy_((*host)[i]);
    });
  }
  template <typename Call>
  c10::intrusive_ptr<c10d::Work> one_out(at::Tensor& out, at::Tensor& in, Call call) {
    auto host_in = std::make_shared<at::Tensor>(in.cpu());
    auto host_out = std::make_shared<at::Tensor>(out.cpu());
    auto work = call(*host_out, *host_in);
    at::Tensor target = out;
    return c10::make_intrusive<StagedWork>(std::move(work),
                                           [target, host_out, host_in]() mutable { target.copy_(*host_out); });
  }

  std::shared_ptr<torchrt::CollectiveGroup> host_;
  int rank_;
};

}  // namespace

std::shared_ptr<torchrt::CollectiveGroup> make_collectives(const torchrt::CollectiveContext& context) {
  return std::make_shared<SimCollectives>(torchrt::make_gloo_group(context), context.rank);
}

}  // namespace xpuperf::sim
