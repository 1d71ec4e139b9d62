#pragma once
// Which device a rank runs on, and waiting for it: what training, inference and the base cases
// all need before their first tensor and around every timing.

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace xpuperf::torchrt {

// A device type LibTorch itself has (not a plug-in's PrivateUse1), registered by the vendor whose
// device it is (NVIDIA's plug-in registers its GPUs): the name configs give it, its type, and how to
// wait for all its queued work, on every stream, where the device's guard waits for one stream only.
struct BuiltinDevice {
  std::string name;
  c10::DeviceType type;
  std::function<void(const torch::Device&)> synchronize;
};
void register_builtin_device(BuiltinDevice device);

// The device a config asks for: "auto" (the active vendor's plug-in device when it brings one, else
// the first registered built-in device type, LOCAL_RANK's device of it, when the machine has one,
// else CPU), "cpu", a built-in device's name or the plug-in device's name ("sim"). ConfigError when
// the device is missing or LOCAL_RANK has none of its own.
torch::Device choose_device(const std::string& name, int local_rank);

// The CPU threads this process computes with: LibTorch's intra-op threads and, where LibTorch
// multiplies through OpenBLAS (Debian's), OpenBLAS's own, which otherwise start one a core
// whatever LibTorch was told: two ranks of one thread each then ran four BLAS threads on two cores.
void set_cpu_threads(int threads);

// Waits for the device's queued work (nothing to wait for on the CPU): what timings need. A built-in
// device waits as its vendor registered; any other device with a guard, for its current stream.
void synchronize(const torch::Device& device);

// The most memory a device's allocator has held in tensors at once, in bytes, as the device's vendor
// reports it (NVIDIA's plug-in: its caching allocator's; the sim's: its arena); -1 where none does.
using PeakMemoryProbe = std::function<double(const torch::Device&)>;
void register_peak_memory_probe(c10::DeviceType type, PeakMemoryProbe probe);
double peak_device_memory_bytes(const torch::Device& device);

// The device memory a new allocation can still take, in bytes (the device's free memory and what its
// allocator holds unused), as the device's vendor reports it; -1 where none does. What sizes a
// paged KV cache's pool.
using FreeMemoryProbe = std::function<double(const torch::Device&)>;
void register_free_memory_probe(c10::DeviceType type, FreeMemoryProbe probe);
double free_device_memory_bytes(const torch::Device& device);

// Whether a device has `feature`, as its vendor says; false where none does. NVIDIA's plug-in says
// "grouped_mm_bf16" (ATen's grouped GEMM has kernels for bf16 on this GPU: Hopper, Blackwell).
using FeatureProbe = std::function<bool(const torch::Device&)>;
void register_device_feature(c10::DeviceType type, const std::string& feature, FeatureProbe probe);
bool device_has_feature(const torch::Device& device, const std::string& feature);

// A stream of the device's own beside its current one (for copies that overlap the computation),
// from its guard's stream pool; none on the CPU and on a device whose guard keeps no pool.
std::optional<c10::Stream> side_stream(const torch::Device& device);

// The device's current stream as its runtime's handle (NVIDIA's: its runtime's stream), for a library
// that launches its own work on it (the image loader's decoder), as the device's vendor registers
// it; null where none does.
using NativeStreamProbe = std::function<void*(const torch::Device&)>;
void register_native_stream(c10::DeviceType type, NativeStreamProbe probe);
void* native_stream(const torch::Device& device);

// Device work recorded once and replayed as one launch (NVIDIA's plug-in: its graphs), where the
// device's vendor brings it. capture runs `work` on a stream of the graph's own, recording what it
// queues, and waits for the capture to end; replay queues the recording on the current stream.
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  virtual void capture(const std::function<void()>& work) = 0;
  virtual void replay() = 0;
};
// A graph keeps the memory its capture allocated in a pool of its own, so that graphs replay in any
// order; one made with `share_memory_with` (captured already) allocates from that graph's pool
// instead, for graphs that never replay at the same time (the decoder's, one per batch bucket).
using DeviceGraphFactory =
    std::function<std::unique_ptr<DeviceGraph>(const torch::Device&, const DeviceGraph* share_memory_with)>;
void register_device_graphs(c10::DeviceType type, DeviceGraphFactory factory);
bool device_has_graphs(c10::DeviceType type);
// Null where the device's vendor brings no graphs.
std::unique_ptr<DeviceGraph> make_device_graph(const torch::Device& device,
                                               const DeviceGraph* share_memory_with = nullptr);

// Page-locks host memory in place, so that the device copies from and to it directly (NVIDIA's
// plug-in: its runtime's host registration), where the device's vendor brings it: the offload's arena
// (host_arena.h), and whether a vision case pins its batches.
struct HostPinning {
  std::function<bool(void* data, std::size_t bytes)> pin;  // false where it could not
  std::function<void(void* data)> unpin;
};
void register_host_pinning(c10::DeviceType type, HostPinning pinning);
// Null where the device's vendor brings none.
const HostPinning* host_pinning(c10::DeviceType type);

// Marks queued on the device's current stream, whose gaps time the device's own work rather than the
// host's launches (NVIDIA's plug-in: its timed events). Read elapsed_ms after the device has
// finished the marked work (synchronize).
class DeviceTimeline {
 public:
  virtual ~DeviceTimeline() = default;
  // Queues a mark and gives its index, 0, 1, 2, ... in order.
  virtual std::size_t mark() = 0;
  virtual double elapsed_ms(std::size_t from, std::size_t to) const = 0;
};
using DeviceTimelineFactory = std::function<std::unique_ptr<DeviceTimeline>(const torch::Device&)>;
void register_device_timeline(c10::DeviceType type, DeviceTimelineFactory factory);
bool device_has_timeline(c10::DeviceType type);
// Null where the device's vendor brings none.
std::unique_ptr<DeviceTimeline> make_device_timeline(const torch::Device& device);

}  // namespace xpuperf::torchrt
