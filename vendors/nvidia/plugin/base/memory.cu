// main_memory-bandwidth and main_memory-capacity on an NVIDIA GPU. Bandwidth: BabelStream's
// kernels (read = a sum, write, copy, triad a = b + s*c) with 16-byte accesses and several loads
// in flight per thread, over arrays far larger than the L2, best and median of `repeats`;
// bytes counted as read plus written. Capacity: the most memory a sequence of cudaMalloc calls
// can hold (large chunks, then smaller ones), each chunk written.

#include <algorithm>
#include <cmath>
#include <vector>

#include "cuda_util.h"
#include "xpuperf/base/base_benchmark.h"

namespace xpuperf::base::cuda {

namespace {

__device__ inline float sum4(float4 v) {
  return v.x + v.y + v.z + v.w;
}

// Streaming (evict-first) cache hints, or the plain read-only path.
template <bool kHint>
__device__ inline float4 load(const float4* p) {
  if constexpr (kHint)
    return __ldcs(p);
  else
    return __ldg(p);
}
template <bool kHint>
__device__ inline void store(float4* p, float4 v) {
  if constexpr (kHint)
    __stcs(p, v);
  else
    *p = v;
}

// Each thread handles kUnroll float4 per step, blockDim apart, so that loads coalesce and several
// are in flight. n4 is a multiple of blockDim * kUnroll (the host sizes the arrays so).
template <int kUnroll, bool kHint>
__global__ void read_kernel(const float4* __restrict__ a, std::size_t n4, float* sink) {
  float acc = 0;
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x * kUnroll;
  for (std::size_t base = static_cast<std::size_t>(blockIdx.x) * blockDim.x * kUnroll + threadIdx.x; base < n4;
       base += step) {
    float4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = load<kHint>(a + base + u * blockDim.x);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc += sum4(v[u]);
  }
  if (acc == -1.0f) *sink = acc;  // never true for our data; keeps the loads
}

template <int kUnroll, bool kHint>
__global__ void write_kernel(float4* __restrict__ c, std::size_t n4, float s) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x * kUnroll;
  const float4 v = make_float4(s, s, s, s);
  for (std::size_t base = static_cast<std::size_t>(blockIdx.x) * blockDim.x * kUnroll + threadIdx.x; base < n4;
       base += step)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) store<kHint>(c + base + u * blockDim.x, v);
}

template <int kUnroll, bool kHint>
__global__ void copy_kernel(const float4* __restrict__ a, float4* __restrict__ c, std::size_t n4) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x * kUnroll;
  for (std::size_t base = static_cast<std::size_t>(blockIdx.x) * blockDim.x * kUnroll + threadIdx.x; base < n4;
       base += step) {
    float4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = load<kHint>(a + base + u * blockDim.x);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) store<kHint>(c + base + u * blockDim.x, v[u]);
  }
}

template <int kUnroll, bool kHint>
__global__ void triad_kernel(float4* __restrict__ a, const float4* __restrict__ b, const float4* __restrict__ c,
                             std::size_t n4, float s) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x * kUnroll;
  for (std::size_t base = static_cast<std::size_t>(blockIdx.x) * blockDim.x * kUnroll + threadIdx.x; base < n4;
       base += step) {
    float4 vb[kUnroll], vc[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      vb[u] = load<kHint>(b + base + u * blockDim.x);
      vc[u] = load<kHint>(c + base + u * blockDim.x);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      store<kHint>(a + base + u * blockDim.x, make_float4(vb[u].x + s * vc[u].x, vb[u].y + s * vc[u].y,
                                                          vb[u].z + s * vc[u].z, vb[u].w + s * vc[u].w));
  }
}

template <int kUnroll, bool kHint>
void launch_kernel(const std::string& name, int blocks, int threads, const DeviceBuffer& a, const DeviceBuffer& b,
                   const DeviceBuffer& c, const DeviceBuffer& sink, std::size_t n4, float s) {
  if (name == "read")
    read_kernel<kUnroll, kHint><<<blocks, threads>>>(a.get<float4>(), n4, sink.get<float>());
  else if (name == "write")
    write_kernel<kUnroll, kHint><<<blocks, threads>>>(c.get<float4>(), n4, s);
  else if (name == "copy")
    copy_kernel<kUnroll, kHint><<<blocks, threads>>>(a.get<float4>(), c.get<float4>(), n4);
  else
    triad_kernel<kUnroll, kHint><<<blocks, threads>>>(a.get<float4>(), b.get<float4>(), c.get<float4>(), n4, s);
}

class CudaBandwidth : public BaseBenchmark {
 public:
  std::string filter(const BaseContext& ctx) override { return need_device(ctx.device); }

  BaseResult run(const BaseContext& ctx) override {
    XPUPERF_CUDA(cudaSetDevice(ctx.device));
    cudaDeviceProp prop{};
    XPUPERF_CUDA(cudaGetDeviceProperties(&prop, ctx.device));
    const int threads = 256;
    const int unroll = static_cast<int>(ctx.config.get_int("cuda_unroll"));
    const bool hints = ctx.config.get_bool("cuda_streaming_hints");
    if (unroll != 4 && unroll != 8) throw std::runtime_error("cuda_unroll must be 4 or 8");
    const std::size_t per_block = static_cast<std::size_t>(threads) * unroll;
    std::size_t n4 = (static_cast<std::size_t>(ctx.config.get_int("cuda_array_mib")) << 20) / sizeof(float4);
    n4 = std::max<std::size_t>(per_block, n4 / per_block * per_block);
    // blocks per SM 0: one block per chunk of the array (each thread does one step, no loop).
    const auto per_sm = static_cast<int>(ctx.config.get_int("cuda_blocks_per_sm"));
    const int blocks = per_sm > 0 ? prop.multiProcessorCount * per_sm : static_cast<int>(n4 / per_block);
    const std::size_t chunk = per_block * static_cast<std::size_t>(blocks);
    n4 = std::max<std::size_t>(chunk, n4 / chunk * chunk);
    const std::size_t bytes = n4 * sizeof(float4);
    DeviceBuffer a(bytes), b(bytes), c(bytes), sink(sizeof(float));
    const float s = 0.4f;
    std::vector<float> host(n4 * 4, 1.0f);
    XPUPERF_CUDA(cudaMemcpy(a.get(), host.data(), bytes, cudaMemcpyHostToDevice));
    std::fill(host.begin(), host.end(), 2.0f);
    XPUPERF_CUDA(cudaMemcpy(b.get(), host.data(), bytes, cudaMemcpyHostToDevice));
    XPUPERF_CUDA(cudaMemset(c.get(), 0, bytes));

    struct Kernel {
      const char* name;
      double bytes;
      std::vector<double> rates;
    };
    std::vector<Kernel> kernels = {{"read", 1.0 * bytes, {}},
                                   {"write", 1.0 * bytes, {}},
                                   {"copy", 2.0 * bytes, {}},
                                   {"triad", 3.0 * bytes, {}},
                                   {"copy (cudaMemcpy)", 2.0 * bytes, {}}};
    auto launch = [&](const std::string& name) {
      // The driver's own device-to-device copy (what PyTorch's copy_ calls), beside the kernel.
      if (name == "copy (cudaMemcpy)") {
        XPUPERF_CUDA(cudaMemcpyAsync(c.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, nullptr));
        return;
      }
      if (unroll == 4 && hints)
        launch_kernel<4, true>(name, blocks, threads, a, b, c, sink, n4, s);
      else if (unroll == 4)
        launch_kernel<4, false>(name, blocks, threads, a, b, c, sink, n4, s);
      else if (hints)
        launch_kernel<8, true>(name, blocks, threads, a, b, c, sink, n4, s);
      else
        launch_kernel<8, false>(name, blocks, threads, a, b, c, sink, n4, s);
    };
    EventTimer timer;
    for (auto& k : kernels) launch(k.name);  // warm-up
    XPUPERF_CUDA(cudaDeviceSynchronize());
    BaseResult r;
    r.started_unix = unix_seconds();
    for (int rep = 0; rep < ctx.config.get_int("repeats"); ++rep) {
      for (auto& k : kernels) {
        timer.start(nullptr);
        launch(k.name);
        k.rates.push_back(k.bytes / timer.stop(nullptr) / 1e9);
      }
    }
    r.ended_unix = unix_seconds();
    XPUPERF_CUDA(cudaGetLastError());
    // The check: each kernel once more from a known state (a = 1, b = 2), its output read back
    // whole. (read's loads are kept by a data-dependent store; its sum is not checked.)
    std::vector<float> got(n4 * 4);
    const auto count_not = [&](const DeviceBuffer& buffer, float expected) {
      XPUPERF_CUDA(cudaDeviceSynchronize());
      XPUPERF_CUDA(cudaMemcpy(got.data(), buffer.get(), bytes, cudaMemcpyDeviceToHost));
      return static_cast<std::size_t>(std::count_if(
          got.begin(), got.end(), [&](float v) { return std::abs(v - expected) > 1e-6f * std::abs(expected); }));
    };
    std::fill(host.begin(), host.end(), 1.0f);
    XPUPERF_CUDA(cudaMemcpy(a.get(), host.data(), bytes, cudaMemcpyHostToDevice));
    std::fill(host.begin(), host.end(), 2.0f);
    XPUPERF_CUDA(cudaMemcpy(b.get(), host.data(), bytes, cudaMemcpyHostToDevice));
    std::size_t wrong = 0;
    launch("write");
    wrong += count_not(c, s);  // c = s
    launch("copy");
    wrong += count_not(c, 1.0f);  // c = a
    launch("triad");
    wrong += count_not(a, 2.0f + s * 1.0f);  // a = b + s*c
    launch("copy (cudaMemcpy)");
    wrong += count_not(c, 2.0f + s * 1.0f);  // c = a
    XPUPERF_CUDA(cudaGetLastError());
    r.correct = wrong == 0;
    r.check = std::to_string(wrong) + " wrong of 4 x " + std::to_string(got.size()) +
              " elements written by write, copy, triad and cudaMemcpy from a known state";
    r.implementation = "CUDA kernels, " + std::to_string(blocks) + " blocks x " + std::to_string(threads) +
                       " threads, 16-byte accesses x " + std::to_string(unroll) +
                       (hints ? " with streaming hints" : "") + ", 3 arrays of " + std::to_string(bytes >> 20) +
                       " MiB, " + prop.name;
    for (const auto& k : kernels)
      r.figures.push_back(
          {k.name, best_of(k.rates), "GB/s", std::string(k.name) == "copy" ? "memory_bandwidth_gbps" : ""});
    for (const auto& k : kernels)
      r.figures.push_back({std::string(k.name) + " median", median_of(k.rates), "GB/s", ""});
    for (auto& f : r.figures)
      if (f.name == "read" || f.name == "copy" || f.name == "triad" || f.name == "copy (cudaMemcpy)")
        f.datasheet = "memory_bandwidth_gbps";
    for (const auto& k : kernels) r.details[k.name] = k.rates;
    return r;
  }
};

__global__ void touch(char* p, std::size_t bytes) {
  for (std::size_t i = (blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x) * 4096; i < bytes;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x * 4096)
    p[i] = 1;
}

class CudaCapacity : public BaseBenchmark {
 public:
  std::string filter(const BaseContext& ctx) override { return need_device(ctx.device); }

  BaseResult run(const BaseContext& ctx) override {
    XPUPERF_CUDA(cudaSetDevice(ctx.device));
    std::size_t free_bytes = 0, total_bytes = 0;
    XPUPERF_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    std::vector<void*> held;
    double bytes = 0;
    BaseResult r;
    r.started_unix = unix_seconds();
    for (std::size_t chunk = static_cast<std::size_t>(ctx.config.get_int("cuda_chunk_mib")) << 20; chunk >= (2u << 20);
         chunk /= 2) {
      while (true) {
        void* p = nullptr;
        if (cudaMalloc(&p, chunk) != cudaSuccess) {
          cudaGetLastError();
          break;
        }
        touch<<<1024, 256>>>(static_cast<char*>(p), chunk);
        held.push_back(p);
        bytes += static_cast<double>(chunk);
      }
    }
    const cudaError_t touched = cudaDeviceSynchronize();
    r.ended_unix = unix_seconds();
    for (void* p : held) cudaFree(p);
    r.correct = touched == cudaSuccess && bytes > 0;
    r.check = touched == cudaSuccess ? "every chunk written by a kernel"
                                     : std::string("writing failed: ") + cudaGetErrorString(touched);
    cudaDeviceProp prop{};
    XPUPERF_CUDA(cudaGetDeviceProperties(&prop, ctx.device));
    r.implementation = "cudaMalloc from " + std::to_string(ctx.config.get_int("cuda_chunk_mib")) +
                       " MiB chunks down to 2 MiB, " + prop.name;
    r.figures.push_back({"held", bytes / (1 << 30), "GiB", "memory_gib"});
    r.figures.push_back({"total (driver)", static_cast<double>(total_bytes) / (1 << 30), "GiB", "memory_gib"});
    r.figures.push_back({"free at start", static_cast<double>(free_bytes) / (1 << 30), "GiB", ""});
    r.details = {{"chunks", held.size()}};
    return r;
  }
};

XPUPERF_REGISTER_BASE("main_memory-bandwidth", "cuda", CudaBandwidth);
XPUPERF_REGISTER_BASE("main_memory-capacity", "cuda", CudaCapacity);

}  // namespace

}  // namespace xpuperf::base::cuda
