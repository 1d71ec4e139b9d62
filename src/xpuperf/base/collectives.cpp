// interconnect-{allreduce,allgather,reducescatter,alltoall}: a size sweep of one collective over
// every rank of the case through a c10d process group: Gloo on the CPU (backend cpu), NCCL on CUDA
// (backend cuda), and on any vendor's device its own collective backend (backend torch: the
// vendor-neutral figure, e.g. the sim's, or a plug-in's HCCL on its NPUs),
// reported like nccl-tests: time per operation averaged over ranks, algbw = size / time,
// busbw = algbw x the collective's factor with n = the total rank count (2(n-1)/n for all-reduce,
// (n-1)/n for the others), and #wrong from a check run after each size's timing.
// nccl-tests' size is the larger buffer: all-gather's output, reduce-scatter's input.

#include <torch/torch.h>

#include <cmath>
#include <thread>

#include "xpuperf/base/base_benchmark.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/distributed.h"
#include "xpuperf/torchrt/vendor_runtime.h"

namespace xpuperf::base {

namespace {

using torchrt::Distributed;

class Collective : public BaseBenchmark {
 public:
  Collective(std::string op, std::string backend) : op_(std::move(op)), backend_(std::move(backend)) {}

  std::string filter(const BaseContext& ctx) override {
    if (ctx.env.world_size < 2)
      return "a collective needs at least 2 ranks: run it with nproc >= 2 (plan key ...:1:2:1, or --nproc 2)";
    if (backend_ == "torch") return "";  // the vendor's device and backend: Distributed says what is missing
    const std::string group = backend_ == "cuda" ? "nccl" : "gloo";
    if (!torchrt::Distributed::has_backend(group)) return "this build has no " + group + " process group";
    if (backend_ == "cuda" && !torch::cuda::is_available()) return "no CUDA device (or no driver) on this host";
    if (op_ == "reducescatter" && group == "gloo")
      return "Gloo has no reduce-scatter (run it on an accelerator with NCCL)";
    return "";
  }

  BaseResult run(const BaseContext& ctx) override {
    const torch::Device device = device_of(ctx);
    torchrt::DistributedOptions options;  // backend auto: gloo on the CPU, the vendor's on its device
    auto dist = torchrt::Distributed::create(ctx.env, device, options);
    const int n = ctx.env.world_size;
    const auto sync = [&] { torchrt::synchronize(device); };
    // An accelerator's sizes, or the CPU's (smaller: Gloo over loopback).
    const std::string sizes = device.is_cpu() ? "cpu_" : "device_";
    const std::int64_t min_bytes = ctx.config.get_int(sizes + "min_bytes");
    const std::int64_t max_bytes = ctx.config.get_int(sizes + "max_bytes");
    const int warmup = static_cast<int>(ctx.config.get_int("warmup"));
    const int iterations = static_cast<int>(ctx.config.get_int(sizes + "iterations"));
    const double factor = op_ == "allreduce" ? 2.0 * (n - 1) / n : static_cast<double>(n - 1) / n;
    const auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(device);

    nlohmann::json sweep = nlohmann::json::array();
    std::int64_t total_wrong = 0;
    double largest_busbw = 0, largest_algbw = 0, largest_size = 0, busbw_sum = 0;
    BaseResult r;
    r.started_unix = unix_seconds();
    for (std::int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
      // Elements of the larger buffer, a multiple of n so that every rank's share is whole.
      const std::int64_t count = std::max<std::int64_t>(n, bytes / 4 / n * n);
      const std::int64_t share = count / n;
      torch::Tensor in, out;
      if (op_ == "allreduce") {
        in = torch::zeros({count}, opts);  // stays zero however often it is summed
      } else if (op_ == "allgather") {
        in = torch::ones({share}, opts), out = torch::empty({count}, opts);
      } else if (op_ == "reducescatter") {
        in = torch::ones({count}, opts), out = torch::empty({share}, opts);
      } else {
        in = torch::ones({count}, opts), out = torch::empty({count}, opts);
      }
      const auto once = [&] {
        if (op_ == "allreduce")
          dist->all_reduce_sum(in);
        else if (op_ == "allgather")
          dist->all_gather(out, in);
        else if (op_ == "reducescatter")
          dist->reduce_scatter_sum(out, in);
        else
          dist->all_to_all(out, in);
      };
      for (int i = 0; i < warmup; ++i) once();
      sync();
      dist->barrier();
      sync();
      const double t0 = steady_seconds();
      for (int i = 0; i < iterations; ++i) once();
      sync();
      torch::Tensor seconds = torch::full({1}, (steady_seconds() - t0) / iterations, opts.dtype(torch::kFloat64));
      dist->all_reduce_sum(seconds);
      const double time = seconds.item<double>() / n;

      const std::int64_t wrong = check(*dist, n, ctx.env.rank, count, opts, sync);
      total_wrong += wrong;
      const double size = static_cast<double>(count) * 4;
      const double algbw = size / time / 1e9, busbw = algbw * factor;
      sweep.push_back({{"size_bytes", size},
                       {"count", count},
                       {"time_us", time * 1e6},
                       {"algbw_gbps", algbw},
                       {"busbw_gbps", busbw},
                       {"wrong", wrong}});
      largest_busbw = busbw, largest_algbw = algbw, largest_size = size;
      busbw_sum += busbw;
      if (bytes > max_bytes / 2) break;  // no overflow past max
    }
    r.ended_unix = unix_seconds();
    r.correct = total_wrong == 0;
    r.check = std::to_string(total_wrong) + " wrong elements over " + std::to_string(sweep.size()) +
              " sizes (nccl-tests' #wrong, summed over ranks)";
    r.implementation = "c10d " + dist->backend() + " on " + torchrt::device_text(device.str()) + ", " +
                       std::to_string(n) + " ranks, float32";
    const auto whole = static_cast<long long>(largest_size);
    const std::string at =
        whole >= (1 << 20) ? std::to_string(whole >> 20) + " MiB" : std::to_string(whole >> 10) + " KiB";
    r.figures.push_back(
        {"busbw at " + at, largest_busbw, "GB/s",
         !device.is_cpu() && ctx.env.world_size == ctx.env.local_world_size ? "interconnect.unidirectional_gbps" : ""});
    r.figures.push_back({"algbw at " + at, largest_algbw, "GB/s", ""});
    r.figures.push_back({"average busbw", busbw_sum / static_cast<double>(sweep.size()), "GB/s", ""});
    r.details = {{"sweep", sweep}, {"ranks", n}, {"busbw_factor", factor}};
    return r;
  }

 private:
  // Runs the collective once on known values and counts the elements that differ from what it
  // must give, summed over ranks.
  template <typename Sync>
  std::int64_t check(torchrt::Distributed& dist, int n, int rank, std::int64_t count, const torch::TensorOptions& opts,
                     const Sync& sync) {
    const std::int64_t share = count / n;
    // Positions in int64 (float32 cannot count past 2^24); the data are small integers, exact in float.
    const auto index = torch::arange(count, opts.dtype(torch::kInt64));
    const auto pattern = torch::remainder(index, 7) + 1;  // 1..7
    const std::int64_t ranks_sum = static_cast<std::int64_t>(n) * (n + 1) / 2;
    const auto as_data = [&](const torch::Tensor& t) { return t.to(opts.dtype()); };
    torch::Tensor wrong;
    if (op_ == "allreduce") {
      auto t = as_data(pattern * (rank + 1));
      dist.all_reduce_sum(t);
      wrong = (t != as_data(pattern * ranks_sum)).sum();
    } else if (op_ == "allgather") {
      auto in = as_data(pattern.slice(0, 0, share) + rank), out = torch::empty({count}, opts);
      dist.all_gather(out, in);
      const auto from = torch::div(index, share, "floor");  // the rank each element came from
      wrong = (out != as_data(pattern.slice(0, 0, share).repeat({n}) + from)).sum();
    } else if (op_ == "reducescatter") {
      auto in = as_data(pattern * (rank + 1)), out = torch::empty({share}, opts);
      dist.reduce_scatter_sum(out, in);
      wrong = (out != as_data(pattern.slice(0, rank * share, (rank + 1) * share) * ranks_sum)).sum();
    } else {
      // Element i of rank r's input is r * 1000 + i mod 1000; rank r's chunk j comes from rank j's chunk r.
      auto in = as_data(torch::remainder(index, 1000) + rank * 1000), out = torch::empty({count}, opts);
      dist.all_to_all(out, in);
      const auto from = torch::div(index, share, "floor");
      const auto expected = from * 1000 + torch::remainder(torch::remainder(index, share) + rank * share, 1000);
      wrong = (out != as_data(expected)).sum();
    }
    sync();
    auto total = wrong.to(torch::kFloat64).reshape({1}).to(opts.device());
    dist.all_reduce_sum(total);
    return static_cast<std::int64_t>(total.item<double>());
  }

  // The device the backend names: the CPU, CUDA device `ctx.device`, or (torch) the vendor's.
  torch::Device device_of(const BaseContext& ctx) const {
    if (backend_ == "cpu") return torch::kCPU;
    if (backend_ == "cuda") return torchrt::choose_device("cuda", ctx.device);
    const torchrt::ActiveVendor* vendor = torchrt::active_vendor();
    if (vendor && vendor->spec.declared && vendor->spec.device_type == "cpu") return torch::kCPU;
    return torchrt::choose_device("auto", ctx.device);
  }

  std::string op_, backend_;
};

#define XPUPERF_COLLECTIVE(op, backend)                          \
  class Collective_##op##_##backend : public Collective {        \
   public:                                                       \
    Collective_##op##_##backend() : Collective(#op, #backend) {} \
  };                                                             \
  XPUPERF_REGISTER_BASE("interconnect-" #op, #backend, Collective_##op##_##backend)

XPUPERF_COLLECTIVE(allreduce, cpu);
XPUPERF_COLLECTIVE(allgather, cpu);
XPUPERF_COLLECTIVE(reducescatter, cpu);
XPUPERF_COLLECTIVE(alltoall, cpu);
XPUPERF_COLLECTIVE(allreduce, cuda);
XPUPERF_COLLECTIVE(allgather, cuda);
XPUPERF_COLLECTIVE(reducescatter, cuda);
XPUPERF_COLLECTIVE(alltoall, cuda);
XPUPERF_COLLECTIVE(allreduce, torch);
XPUPERF_COLLECTIVE(allgather, torch);
XPUPERF_COLLECTIVE(reducescatter, torch);
XPUPERF_COLLECTIVE(alltoall, torch);

}  // namespace

}  // namespace xpuperf::base
