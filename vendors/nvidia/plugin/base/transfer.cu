// interconnect-h2d / interconnect-d2h (pinned and pageable host memory, a size sweep),
// interconnect-P2P_intraserver (peer copies between every ordered pair of devices, a matrix like
// nvbandwidth's) and launch_latency (an empty kernel's launch, launch + synchronise, and a 4-byte
// host-device round trip), each timed with CUDA events or the host clock, best and median.

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "cuda_util.h"
#include "xpuperf/base/base_benchmark.h"

namespace xpuperf::base::cuda {

namespace {

struct PinnedDeleter {
  void operator()(void* p) const { cudaFreeHost(p); }
};

// GB/s of `repeats` calls of `copy` (`bytes` each) on `stream`, each timed with CUDA events,
// after one untimed call. The events are made on the current device, which must be the stream's.
std::vector<double> copy_rates(cudaStream_t stream, int repeats, std::size_t bytes, const std::function<void()>& copy) {
  EventTimer timer;
  copy();
  XPUPERF_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> rates;
  for (int i = 0; i < repeats; ++i) {
    timer.start(stream);
    copy();
    rates.push_back(static_cast<double>(bytes) / timer.stop(stream) / 1e9);
  }
  return rates;
}

class HostTransfer : public BaseBenchmark {
 public:
  explicit HostTransfer(bool to_device) : to_device_(to_device) {}
  std::string filter(const BaseContext& ctx) override { return need_device(ctx.device); }

  BaseResult run(const BaseContext& ctx) override {
    XPUPERF_CUDA(cudaSetDevice(ctx.device));
    const auto sizes = ctx.config.get_string_list("sizes_mib");
    std::size_t largest = 0;
    for (const auto& s : sizes) largest = std::max<std::size_t>(largest, std::stoull(s) << 20);
    DeviceBuffer device(largest);
    void* pinned_raw = nullptr;
    XPUPERF_CUDA(cudaMallocHost(&pinned_raw, largest));
    std::unique_ptr<void, PinnedDeleter> pinned(pinned_raw);
    std::vector<char> pageable(largest, 3);
    std::memset(pinned.get(), 5, largest);
    XPUPERF_CUDA(cudaMemset(device.get(), 9, largest));
    cudaStream_t stream = nullptr;
    XPUPERF_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::shared_ptr<void> stream_guard(nullptr, [stream](void*) { cudaStreamDestroy(stream); });
    const int repeats = static_cast<int>(ctx.config.get_int("repeats"));
    BaseResult r;
    nlohmann::json sweep = nlohmann::json::array();
    double pinned_largest = 0, pageable_largest = 0, pinned_largest_median = 0;
    r.started_unix = unix_seconds();
    for (const char* memory : {"pinned", "pageable"}) {
      void* host = std::string(memory) == "pinned" ? pinned.get() : static_cast<void*>(pageable.data());
      for (const auto& s : sizes) {
        const std::size_t bytes = std::stoull(s) << 20;
        auto copy = [&] {
          if (to_device_)
            XPUPERF_CUDA(cudaMemcpyAsync(device.get(), host, bytes, cudaMemcpyHostToDevice, stream));
          else
            XPUPERF_CUDA(cudaMemcpyAsync(host, device.get(), bytes, cudaMemcpyDeviceToHost, stream));
        };
        const std::vector<double> rates = copy_rates(stream, repeats, bytes, copy);
        sweep.push_back(
            {{"memory", memory}, {"bytes", bytes}, {"best_gbps", best_of(rates)}, {"median_gbps", median_of(rates)}});
        if (bytes == largest) {
          if (std::string(memory) == "pinned")
            pinned_largest = best_of(rates), pinned_largest_median = median_of(rates);
          else
            pageable_largest = best_of(rates);
        }
      }
    }
    r.ended_unix = unix_seconds();
    // The check: the pageable transfers ran last; their bytes must have arrived.
    std::vector<char> probe(4096);
    if (to_device_) {
      XPUPERF_CUDA(cudaMemcpy(probe.data(), device.get(), probe.size(), cudaMemcpyDeviceToHost));
      r.correct = std::all_of(probe.begin(), probe.end(), [](char c) { return c == 3; });
    } else {
      r.correct = std::all_of(pageable.begin(), pageable.begin() + 4096, [](char c) { return c == 9; });
    }
    r.check = std::string("the first 4 KiB of the last transfer ") + (r.correct ? "arrived intact" : "DIFFER");
    const std::string largest_text = std::to_string(largest >> 20) + " MiB";
    r.implementation = std::string("cudaMemcpyAsync ") + (to_device_ ? "host to device" : "device to host") +
                       ", sizes " + std::to_string(sizes.size()) + " up to " + largest_text;
    r.figures.push_back({"pinned " + largest_text, pinned_largest, "GB/s", "host_link_gbps"});
    r.figures.push_back({"pinned " + largest_text + " median", pinned_largest_median, "GB/s", ""});
    r.figures.push_back({"pageable " + largest_text, pageable_largest, "GB/s", "host_link_gbps"});
    r.details = {{"sweep", sweep}};
    return r;
  }

 private:
  bool to_device_;
};

class H2D : public HostTransfer {
 public:
  H2D() : HostTransfer(true) {}
};
class D2H : public HostTransfer {
 public:
  D2H() : HostTransfer(false) {}
};

class PeerCopy : public BaseBenchmark {
 public:
  std::string filter(const BaseContext&) override {
    const int n = device_count();
    if (n < 2) return "needs at least 2 devices on this host (it has " + std::to_string(n) + ")";
    return "";
  }

  BaseResult run(const BaseContext& ctx) override {
    const int n = device_count();
    const std::size_t bytes = static_cast<std::size_t>(ctx.config.get_int("size_mib")) << 20;
    std::vector<std::unique_ptr<DeviceBuffer>> buffers;
    for (int d = 0; d < n; ++d) {
      XPUPERF_CUDA(cudaSetDevice(d));
      buffers.push_back(std::make_unique<DeviceBuffer>(bytes));
      XPUPERF_CUDA(cudaMemset(buffers.back()->get(), d + 1, bytes));
      for (int peer = 0; peer < n; ++peer) {
        int can = 0;
        if (peer != d && cudaDeviceCanAccessPeer(&can, d, peer) == cudaSuccess && can) {
          const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
          if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) XPUPERF_CUDA(e);
          cudaGetLastError();
        }
      }
    }
    const int repeats = static_cast<int>(ctx.config.get_int("repeats"));
    nlohmann::json matrix = nlohmann::json::array();
    std::vector<double> all;
    bool correct = true;
    BaseResult r;
    r.started_unix = unix_seconds();
    for (int src = 0; src < n; ++src) {
      nlohmann::json row = nlohmann::json::array();
      for (int dst = 0; dst < n; ++dst) {
        if (src == dst) {
          row.push_back(nullptr);
          continue;
        }
        XPUPERF_CUDA(cudaSetDevice(src));
        cudaStream_t stream = nullptr;
        XPUPERF_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        const std::vector<double> rates = copy_rates(stream, repeats, bytes, [&] {
          XPUPERF_CUDA(cudaMemcpyPeerAsync(buffers[dst]->get(), dst, buffers[src]->get(), src, bytes, stream));
        });
        cudaStreamDestroy(stream);
        unsigned char probe = 0;
        XPUPERF_CUDA(cudaMemcpy(&probe, buffers[dst]->get(), 1, cudaMemcpyDeviceToHost));
        correct = correct && probe == src + 1;
        XPUPERF_CUDA(cudaSetDevice(dst));
        XPUPERF_CUDA(cudaMemset(buffers[dst]->get(), dst + 1, bytes));  // back to its own pattern
        row.push_back(best_of(rates));
        all.push_back(best_of(rates));
      }
      matrix.push_back(row);
    }
    r.ended_unix = unix_seconds();
    r.correct = correct;
    r.check = correct ? "every copy delivered the source's pattern" : "a copy did NOT deliver the source's pattern";
    r.implementation = "cudaMemcpyPeerAsync of " + std::to_string(bytes >> 20) + " MiB, every ordered pair of " +
                       std::to_string(n) + " devices";
    r.figures.push_back(
        {"min pair", *std::min_element(all.begin(), all.end()), "GB/s", "interconnect.unidirectional_gbps"});
    r.figures.push_back({"median pair", median_of(all), "GB/s", "interconnect.unidirectional_gbps"});
    r.figures.push_back({"max pair", best_of(all), "GB/s", "interconnect.unidirectional_gbps"});
    r.details = {{"matrix_gbps", matrix}, {"note", "row = source device, column = destination"}};
    return r;
  }
};

__global__ void empty_kernel() {}

class LaunchLatency : public BaseBenchmark {
 public:
  std::string filter(const BaseContext& ctx) override { return need_device(ctx.device); }

  BaseResult run(const BaseContext& ctx) override {
    XPUPERF_CUDA(cudaSetDevice(ctx.device));
    const int launches = static_cast<int>(ctx.config.get_int("launches"));
    cudaStream_t stream = nullptr;
    XPUPERF_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::shared_ptr<void> stream_guard(nullptr, [stream](void*) { cudaStreamDestroy(stream); });
    for (int i = 0; i < 100; ++i) empty_kernel<<<1, 1, 0, stream>>>();
    XPUPERF_CUDA(cudaStreamSynchronize(stream));
    BaseResult r;
    r.started_unix = unix_seconds();
    // Launch rate: host time to enqueue back-to-back launches.
    double t0 = steady_seconds();
    for (int i = 0; i < launches; ++i) empty_kernel<<<1, 1, 0, stream>>>();
    const double enqueue = (steady_seconds() - t0) / launches;
    XPUPERF_CUDA(cudaStreamSynchronize(stream));
    // Launch and wait, one at a time.
    std::vector<double> round_trips;
    for (int i = 0; i < launches / 10; ++i) {
      t0 = steady_seconds();
      empty_kernel<<<1, 1, 0, stream>>>();
      XPUPERF_CUDA(cudaStreamSynchronize(stream));
      round_trips.push_back(steady_seconds() - t0);
    }
    // 4 bytes to the device and back, pinned.
    void* host = nullptr;
    XPUPERF_CUDA(cudaMallocHost(&host, 4));
    std::unique_ptr<void, PinnedDeleter> host_guard(host);
    DeviceBuffer device(4);
    std::vector<double> memcpy_trips;
    *static_cast<int*>(host) = 7;
    for (int i = 0; i < launches / 10; ++i) {
      t0 = steady_seconds();
      XPUPERF_CUDA(cudaMemcpyAsync(device.get(), host, 4, cudaMemcpyHostToDevice, stream));
      XPUPERF_CUDA(cudaMemcpyAsync(host, device.get(), 4, cudaMemcpyDeviceToHost, stream));
      XPUPERF_CUDA(cudaStreamSynchronize(stream));
      memcpy_trips.push_back(steady_seconds() - t0);
    }
    r.ended_unix = unix_seconds();
    r.correct = *static_cast<int*>(host) == 7;
    r.check = r.correct ? "the 4-byte round trip returned its value" : "the 4-byte round trip returned a wrong value";
    r.implementation = "empty kernel <<<1,1>>> on a non-blocking stream, " + std::to_string(launches) + " launches";
    auto us = [](double s) { return s * 1e6; };
    r.figures.push_back({"launch + synchronise (median)", us(median_of(round_trips)), "us", ""});
    r.figures.push_back({"launch enqueue", us(enqueue), "us", ""});
    r.figures.push_back({"4-byte H2D + D2H round trip (median)", us(median_of(memcpy_trips)), "us", ""});
    std::vector<double> sorted = round_trips;
    std::sort(sorted.begin(), sorted.end());
    r.figures.push_back({"launch + synchronise (p99)", us(sorted[sorted.size() * 99 / 100]), "us", ""});
    return r;
  }
};

XPUPERF_REGISTER_BASE("interconnect-h2d", "cuda", H2D);
XPUPERF_REGISTER_BASE("interconnect-d2h", "cuda", D2H);
XPUPERF_REGISTER_BASE("interconnect-P2P_intraserver", "cuda", PeerCopy);
XPUPERF_REGISTER_BASE("launch_latency", "cuda", LaunchLatency);

}  // namespace

}  // namespace xpuperf::base::cuda
