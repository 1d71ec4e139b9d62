#include "xpuperf/optim/offload_optimizer.h"

#include <ATen/Parallel.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <future>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "xpuperf/core/files.h"
#include "xpuperf/core/parallel.h"
#include "xpuperf/optim/cpu_adam.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/distributed.h"
#include "xpuperf/torchrt/host_arena.h"

namespace xpuperf::optim {
namespace {

struct Slot {
  torch::Tensor param;         // on its device, in its (perhaps now bf16) type
  torch::Tensor master, m, v;  // host, fp32, flat
  // Host, flat, in the parameter's type: its gradient in, and for a bf16 parameter the updated weight
  // out (cpu_adam_bf16); an fp32 parameter takes the master itself.
  torch::Tensor exchange;
  float weight_decay = 0;
  bool bf16() const { return exchange.scalar_type() == torch::kBFloat16; }
};

class OffloadAdam : public StepOptimizer, public GradientTap {
 public:
  OffloadAdam(const AdamHyper& h, double weight_decay, const std::vector<torch::Tensor>& with_decay,
              const std::vector<torch::Tensor>& without_decay, bool device_bf16, OffloadOverlap overlap,
              bool stream_gradients)
      : h_(h), lr_(h.lr), overlap_(overlap), stream_(stream_gradients && !overlap.enabled) {
    const torch::NoGradGuard no_grad;
    const auto stored_bf16 = [&](const torch::Tensor& p) {
      return p.scalar_type() == torch::kBFloat16 || (device_bf16 && p.is_floating_point());
    };
    // The whole state in one block of host memory at its exact size, page-locked where a GPU copies
    // from it (torchrt/host_arena.h): fp32 master and moments, and the exchange buffer.
    std::int64_t bytes = 0, parameters = 0;
    std::optional<c10::DeviceType> pinned_for;  // where PyTorch's pinned allocator serves as well
    for (const auto* group : {&with_decay, &without_decay})
      for (const auto& p : *group) {
        parameters += p.numel();
        bytes += 3 * torchrt::HostArena::rounded(4 * p.numel()) +
                 torchrt::HostArena::rounded((stored_bf16(p) ? 2 : 4) * p.numel());
        if (p.is_cuda()) pinned_for = p.device().type();
      }
    auto arena = [&] {
      try {
        return torchrt::HostArena(bytes, pinned_for, at::get_num_threads());
      } catch (const std::runtime_error& e) {
        throw ConfigError("offload_optimizer: the optimizer's state of " + std::to_string(parameters) +
                          " parameters does not fit in this host's memory (" + e.what() +
                          "): free host memory, or train a smaller model or on more hosts");
      }
    }();
    pinned_exactly_ = arena.pinned_exactly();
    auto add = [&](const torch::Tensor& p, double wd) {
      const bool bf16 = stored_bf16(p);
      // Zero from the arena: the moments start so; the master and the exchange buffer are written
      // before they are read.
      Slot s{p,
             arena.take(p.numel(), torch::kFloat),
             arena.take(p.numel(), torch::kFloat),
             arena.take(p.numel(), torch::kFloat),
             arena.take(p.numel(), bf16 ? torch::kBFloat16 : torch::kFloat),
             static_cast<float>(wd)};
      s.master.copy_(p.detach().reshape({-1}));
      if (bf16 && p.scalar_type() != torch::kBFloat16) s.param.set_data(p.to(torch::kBFloat16));
      slots_.push_back(std::move(s));
    };
    for (const auto& p : with_decay) add(p, weight_decay);
    for (const auto& p : without_decay) add(p, 0.0);
    streamed_.assign(slots_.size(), 0);
    for (std::size_t i = 0; i < slots_.size(); ++i) slot_of_[slots_[i].param.unsafeGetTensorImpl()] = i;
  }

  void set_lr(double lr) override { lr_ = lr; }
  void zero_grad() override {
    for (auto& s : slots_)
      if (s.param.grad().defined()) s.param.mutable_grad().zero_();
  }

  ~OffloadAdam() override {
    if (pending_.valid()) pending_.wait();  // the thread reads this object's buffers
    // The model outlives this optimizer: its later backward passes must not call into it.
    for (std::size_t i = 0; i < hooks_.size(); ++i) slots_[i].param.remove_hook(hooks_[i]);
  }

  GradientTap* gradient_tap() override { return stream_ ? this : nullptr; }

  void from_backward() override {
    const std::lock_guard<std::mutex> lock(stream_mutex_);
    if (tapped_) return;
    tapped_ = true;
    attach_streaming_hooks();
  }

  void from_buckets(int ranks) override {
    const std::lock_guard<std::mutex> lock(stream_mutex_);
    tapped_ = true;
    inverse_ranks_ = 1.0f / static_cast<float>(ranks);
  }

  void begin_backward(bool last) override {
    const std::lock_guard<std::mutex> lock(stream_mutex_);
    if (!tapped_) return;
    if (!last) {
      ++earlier_micro_batches_;
      return;
    }
    accumulated_ = earlier_micro_batches_ > 0;
    earlier_micro_batches_ = 0;
    streaming_ = true;
    std::fill(streamed_.begin(), streamed_.end(), 0);
  }

  // Each parameter's part of the bucket's sum, once the all-reduce has made it, to the host on the
  // copy stream; the update divides it by the ranks.
  void take_bucket(const torchrt::ReducedBucket& bucket) override {
    const std::lock_guard<std::mutex> lock(stream_mutex_);
    if (!streaming_ || bucket.parts.empty()) return;
    const torch::NoGradGuard no_grad;
    const auto take = [&] {
      bucket.wait();
      for (const auto& [param, sum] : bucket.parts) {
        const auto it = slot_of_.find(param.unsafeGetTensorImpl());
        if (it == slot_of_.end()) continue;
        const std::size_t i = it->second;
        if (streamed_[i] != 0) {
          streamed_[i] = 2;
          continue;
        }
        streamed_[i] = 1;
        slots_[i].exchange.copy_(sum.reshape({-1}), /*non_blocking=*/true);
      }
    };
    if (const auto stream = copy_stream(bucket.parts.front().second.device())) {
      // The copy stream waits for the all-reduce (which waited for the backward's writes), not the
      // host; the bucket's memory stays the bucket's, so nothing reuses it meanwhile.
      const c10::StreamGuard on_copy_stream(*stream);
      take();
      return;
    }
    take();
  }

  void forget_step() override {
    const std::lock_guard<std::mutex> lock(stream_mutex_);
    std::fill(streamed_.begin(), streamed_.end(), 0);
  }

  // clip_gradients would rescale every device gradient before step() copies it; here the update
  // rescales as it reads each one (a streamed gradient left the device unclipped).
  bool clip_in_step(const torch::Tensor& norm, double max_norm) override {
    clip_norm_ = norm;
    max_norm_ = max_norm;
    return true;
  }

  void step() override {
    const torch::NoGradGuard no_grad;
    flush();  // the previous update, if it still runs: its weights before this step's update starts
    ++step_;
    const double copies_start = steady_seconds();
    std::int64_t streamed = 0, elements = 0;
    {
      const std::lock_guard<std::mutex> lock(stream_mutex_);
      streaming_ = false;
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        auto& s = slots_[i];
        TORCH_CHECK(s.param.grad().defined(),
                    "a parameter has no gradient: every parameter must take part in the loss");
        elements += s.master.numel();
        if (streamed_[i] == 1) {
          streamed += s.master.numel();
          continue;
        }
        // To the host in the parameter's type, queued, straight into the pinned buffer (a gradient of
        // another type converted on the device first). A blocking copy converts on the host through a
        // pageable temporary, a tensor at a time. On the copy stream when gradients stream (it may
        // still write a gradient that arrived twice): in order after that copy.
        copy_to_host(s.exchange, s.param.grad().reshape({-1}));
      }
    }
    if (!slots_.empty()) torchrt::synchronize(slots_.front().param.device());  // every gradient has arrived
    gradient_wait_s_ += steady_seconds() - copies_start;
    streamed_share_ += elements > 0 ? static_cast<double>(streamed) / static_cast<double>(elements) : 0.0;
    const float clip = clip_scale();
    // A gradient that streamed from a bucket is the sum over the ranks: its share of the average too
    // (one rank's stream from the backward has inverse_ranks_ 1).
    std::vector<float> gradient_scale(slots_.size(), clip);
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (streamed_[i] == 1) gradient_scale[i] = clip * inverse_ranks_;
    const double lr = lr_;
    const std::int64_t step = step_;
    // The rank's share of the cores (ATen's intra-op threads: the launcher's OMP_NUM_THREADS, or the
    // physical cores), read here: a new thread does not inherit it.
    const int threads = at::get_num_threads();
    if (!overlap_.enabled || step <= overlap_.synchronous_steps) {
      update(lr, step, threads, gradient_scale);
      to_device();
      return;
    }
    // Beside the next step, one core fewer: the thread that launches the step's kernels keeps its own.
    const int beside = std::max(1, threads - 1);
    pending_ = std::async(std::launch::async,
                          [this, lr, step, beside, gradient_scale] { update(lr, step, beside, gradient_scale); });
  }

  void flush() override {
    if (!pending_.valid()) return;
    const double start = steady_seconds();
    pending_.get();  // rethrows what the update threw
    waited_s_ += steady_seconds() - start;
    const torch::NoGradGuard no_grad;
    to_device();
  }

  // Where the host's part of a step goes: the update's seconds and rate (a bf16 parameter reads and
  // writes 28 bytes: the rate against the host's memory bandwidth says whether that or the cores
  // bound it), the threads it ran on, and with the overlap how long the next step still waited.
  void describe(nlohmann::json& finished) const override {
    if (updates_ == 0) return;
    std::int64_t elements = 0;
    for (const auto& s : slots_) elements += s.master.numel();
    finished["offload_host_update_s"] = update_s_ / static_cast<double>(updates_);
    finished["offload_host_parameters_per_s"] = static_cast<double>(elements * updates_) / update_s_;
    finished["offload_host_threads"] = threads_;
    // false: the state came from PyTorch's pinned allocator (sizes rounded up to powers of two).
    finished["offload_host_pinned_exactly"] = pinned_exactly_;
    if (overlap_.enabled) finished["offload_overlap_wait_s"] = waited_s_ / static_cast<double>(updates_);
    // How long step() waited for the gradients on the host (from its call, while the device may still
    // run the backward's last kernels), and the share of their elements that streamed during the
    // backward (0 where they cannot: offload_optimizer.h).
    finished["offload_gradient_wait_s"] = gradient_wait_s_ / static_cast<double>(step_);
    finished["offload_streamed_gradient_share"] = streamed_share_ / static_cast<double>(step_);
  }

 private:
  // Adam / AdamW on the host masters from the host gradients: on `threads` threads, touching no
  // tensor of the device (so that it may run beside the next step). The parameters are cut into
  // pieces of kPiece elements that the threads take in turn, so that a few large tensors (the
  // embedding, the output layer) and many small ones (the norms) spread alike.
  void update(double lr, std::int64_t step, int threads, const std::vector<float>& gradient_scale) {
    constexpr std::int64_t kPiece = 1 << 16;  // 1.9 MB of state a piece (30 bytes an element)
    const double start = steady_seconds();
    threads_ = threads;
    const double correction1 = 1.0 - std::pow(h_.beta1, static_cast<double>(step));
    const double correction2 = 1.0 - std::pow(h_.beta2, static_cast<double>(step));
    struct Piece {
      std::size_t slot;
      std::int64_t begin, end;
    };
    std::vector<Piece> pieces;
    std::vector<CpuAdamCoefficients> coefficients;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const auto& s = slots_[i];
      coefficients.push_back({h_.decoupled, static_cast<float>(1.0 - lr * s.weight_decay), s.weight_decay,
                              static_cast<float>(h_.beta1), static_cast<float>(1.0 - h_.beta1),
                              static_cast<float>(h_.beta2), static_cast<float>(1.0 - h_.beta2),
                              static_cast<float>(std::sqrt(correction2)), static_cast<float>(h_.eps),
                              static_cast<float>(-lr / correction1), gradient_scale[i]});
      const auto n = s.master.numel();
      for (std::int64_t begin = 0; begin < n; begin += kPiece)
        pieces.push_back({i, begin, std::min(n, begin + kPiece)});
    }
    parallel_items(pieces.size(), threads, [&](std::size_t k, int) {
      const auto& piece = pieces[k];
      const auto& s = slots_[piece.slot];
      const auto& c = coefficients[piece.slot];
      float* p = s.master.data_ptr<float>();
      float* m = s.m.data_ptr<float>();
      float* v = s.v.data_ptr<float>();
      if (s.bf16())
        cpu_adam_bf16(p, m, v, reinterpret_cast<std::uint16_t*>(s.exchange.data_ptr<at::BFloat16>()), piece.begin,
                      piece.end, c);
      else
        cpu_adam(p, m, v, s.exchange.data_ptr<float>(), piece.begin, piece.end, c);
    });
    // One update at a time (the next waits in flush for this one), so these need no lock.
    update_s_ += steady_seconds() - start;
    ++updates_;
  }

  // The weights back to the device, queued: a bf16 parameter's as the update left them in the
  // exchange buffer, an fp32 one's master. The next step() queues its gradients' copies into the
  // exchange buffers behind these on the same stream, and waits for all (its synchronize) before the
  // host touches them again.
  void to_device() {
    for (auto& s : slots_)
      s.param.copy_((s.bf16() ? s.exchange : s.master).view(s.param.sizes()), /*non_blocking=*/true);
  }

  // Each parameter's hook sees the gradient its backward made, before autograd adds it to .grad
  // (summed over the parameter's uses in that backward). With earlier micro-batches .grad holds
  // their sum: the host gets the total, added in autograd's order. The copy runs on a stream of its
  // own once the gradient is ready, and the gradient's memory is not reused before it has been read.
  void attach_streaming_hooks() {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      hooks_.push_back(slots_[i].param.register_hook([this, i](const torch::Tensor& grad) {
        const std::lock_guard<std::mutex> lock(stream_mutex_);
        if (!streaming_) return;
        if (streamed_[i] != 0) {  // a second backward pass for it: step() copies the complete .grad
          streamed_[i] = 2;
          return;
        }
        streamed_[i] = 1;
        const torch::NoGradGuard no_grad;
        const auto& earlier = slots_[i].param.grad();
        torch::Tensor total = grad.reshape({-1});
        if (accumulated_ && earlier.defined()) total = earlier.reshape({-1}) + total;
        copy_to_host(slots_[i].exchange, total);
      }));
    }
  }

  // exchange ← device (or host) tensor `from`, queued where a GPU copies: on the copy stream when
  // gradients stream, after the work that made `from` on the current stream.
  void copy_to_host(torch::Tensor& exchange, const torch::Tensor& from) {
    if (const auto stream = stream_ ? copy_stream(from.device()) : std::nullopt) {
      const c10::impl::VirtualGuardImpl guard(from.device().type());
      c10::Event ready(from.device().type());
      ready.record(guard.getStream(from.device()));
      ready.block(*stream);
      {
        const c10::StreamGuard on_copy_stream(*stream);
        exchange.copy_(from, /*non_blocking=*/true);
      }
      from.record_stream(*stream);  // its memory stays unused until the copy has read it
      return;
    }
    exchange.copy_(from, /*non_blocking=*/true);
  }

  // The device's copy stream (torchrt::side_stream), taken at the first use; none on the CPU or on
  // a device without a stream pool, where copies go on the current stream.
  std::optional<c10::Stream> copy_stream(const torch::Device& device) {
    if (device.is_cpu()) return std::nullopt;
    if (!copy_stream_looked_for_) {
      copy_stream_ = torchrt::side_stream(device);
      copy_stream_looked_for_ = true;
    }
    return copy_stream_;
  }

  // The factor clip_gradients would have multiplied every gradient by (1 without clipping): its
  // arithmetic, in float, from the norm of this step's gradients.
  float clip_scale() {
    if (!clip_norm_.defined()) return 1.0f;
    const float norm = clip_norm_.to(torch::kFloat).item<float>();
    clip_norm_ = torch::Tensor();
    const float coefficient = (1.0f / (norm + 1e-6f)) * static_cast<float>(max_norm_);
    return std::min(coefficient, 1.0f);
  }

  AdamHyper h_;
  double lr_;
  OffloadOverlap overlap_;
  // Gradient streaming (offload_optimizer.h): the hooks' state, guarded (autograd's threads run them).
  bool stream_;
  std::mutex stream_mutex_;
  bool tapped_ = false;      // from_backward or from_buckets was called: the step's gradients are taken
  float inverse_ranks_ = 1;  // from_buckets': what a streamed sum is multiplied by
  std::unordered_map<const c10::TensorImpl*, std::size_t> slot_of_;
  bool streaming_ = false;    // this step's last backward is running
  bool accumulated_ = false;  // .grad holds earlier micro-batches' sums
  std::int64_t earlier_micro_batches_ = 0;
  std::vector<char> streamed_;  // per slot this step: 0 not yet, 1 on its way, 2 arrived twice
  std::vector<unsigned> hooks_;
  std::optional<c10::Stream> copy_stream_;
  bool copy_stream_looked_for_ = false;
  torch::Tensor clip_norm_;  // clip_in_step's, for the next step
  double max_norm_ = 0;
  double gradient_wait_s_ = 0, streamed_share_ = 0;
  std::int64_t step_ = 0;
  std::vector<Slot> slots_;
  std::future<void> pending_;           // the update running beside the next step (offload_overlap)
  double update_s_ = 0, waited_s_ = 0;  // the updates' seconds; the steps' waits for an overlapped one
  std::int64_t updates_ = 0;
  int threads_ = 0;
  bool pinned_exactly_ = false;
};

}  // namespace

std::unique_ptr<StepOptimizer> make_offload_adam(const AdamHyper& h, double weight_decay,
                                                 std::vector<torch::Tensor> with_decay,
                                                 std::vector<torch::Tensor> without_decay, bool device_bf16,
                                                 OffloadOverlap overlap, bool stream_gradients) {
  return std::make_unique<OffloadAdam>(h, weight_decay, with_decay, without_decay, device_bf16, overlap,
                                       stream_gradients);
}

}  // namespace xpuperf::optim
