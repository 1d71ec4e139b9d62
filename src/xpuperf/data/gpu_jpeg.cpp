#include "xpuperf/data/gpu_jpeg.h"

#include "xpuperf/data/idx.h"

#ifdef XPUPERF_HAVE_NVJPEG
#include <cuda_runtime.h>
#include <nvjpeg.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "xpuperf/data/gpu_crop.h"
#endif

namespace xpuperf::data {

#ifdef XPUPERF_HAVE_NVJPEG

namespace {

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw DataError(std::string(what) + ": " + cudaGetErrorString(status));
}

void check_nvjpeg(nvjpegStatus_t status, const char* what) {
  if (status != NVJPEG_STATUS_SUCCESS)
    throw DataError(std::string(what) + " failed (nvJPEG status " + std::to_string(status) + ")");
}

}  // namespace

// Not in the anonymous namespace: GpuJpegDecoder::State, a member of a class with linkage, holds one.
namespace gpu_jpeg_internal {

// One nvJPEG library handle for each device and back end, shared by every decoder in the process
// (nvJPEG allows it; bitstream handles and streams stay one a decoder). Each handle of the hardware
// back end brings CUDA streams of its own, and a process's streams share
// CUDA_DEVICE_MAX_CONNECTIONS hardware queues with the training step, where a decoder's copy waits
// behind the step's whole CUDA graph. Fewer streams, fewer such waits: ResNet-50 beside nvJPEG
// went from 91.4 to 92.6 % of its synthetic rate on an H200 (resnet50 README).
//
// The hardware back end's decoding state is shared too, and its decoders decode one batch at a
// time (`decoding`): the loader threads still read, probe and stage their files side by side, but
// only one batch's decode and crop kernels run beside the step. Concurrent decodes each bring a
// burst of copies and kernels into the step's queues: with two loader threads ResNet-50 kept 95.1 %
// of its synthetic rate, and 97.5 % once they decoded in turn (3 threads: 92.5 → 97.6 %; H200,
// resnet50 README). The CUDA back end decodes Huffman on the calling thread, so its decoders keep a
// state each and run together.
struct SharedHandle {
  nvjpegHandle_t handle = nullptr;
  bool hardware = false;
  nvjpegJpegState_t hardware_state = nullptr;  // hardware back end only; used under `decoding`
  std::mutex decoding;
  SharedHandle() = default;
  SharedHandle(const SharedHandle&) = delete;
  SharedHandle& operator=(const SharedHandle&) = delete;
  ~SharedHandle() {
    if (hardware_state) nvjpegJpegStateDestroy(hardware_state);
    if (handle) nvjpegDestroy(handle);
  }
};

// Made on the current device (the caller has set it).
std::shared_ptr<SharedHandle> shared_handle(int device, bool allow_hardware) {
  static std::mutex mutex;
  static std::map<std::pair<int, bool>, std::weak_ptr<SharedHandle>> handles;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = handles[{device, allow_hardware}];
  if (auto held = slot.lock()) return held;
  auto made = std::make_shared<SharedHandle>();
  // The hardware decoder where the GPU has one; the CUDA decoder (Huffman on the calling thread) elsewhere.
  made->hardware = allow_hardware && nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT,
                                                    &made->handle) == NVJPEG_STATUS_SUCCESS;
  if (made->hardware) {
    check_nvjpeg(nvjpegJpegStateCreate(made->handle, &made->hardware_state), "nvjpegJpegStateCreate");
  } else {
    made->handle = nullptr;
    check_nvjpeg(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &made->handle),
                 "nvjpegCreateEx");
  }
  slot = made;
  return made;
}

}  // namespace gpu_jpeg_internal

using gpu_jpeg_internal::shared_handle;
using gpu_jpeg_internal::SharedHandle;

bool have_gpu_jpeg() {
  return true;
}

struct GpuJpegDecoder::State {
  int device = 0, out_size = 0;
  // The batch's files, copied into pinned memory: nvJPEG's copies of pageable bytes hold the loader
  // thread for each file (+1–2 % ResNet-50 img/s beside the step on an H100).
  unsigned char* staged = nullptr;
  std::size_t staged_bytes = 0;
  std::shared_ptr<SharedHandle> shared;
  nvjpegJpegState_t own_state = nullptr;  // the CUDA back end's; the hardware back end uses shared's
  nvjpegJpegStream_t stream_info = nullptr;
  cudaStream_t stream = nullptr;
  std::uint8_t* decoded = nullptr;  // the batch's decoded images, one after another
  std::size_t decoded_bytes = 0;
  GpuCropParams* host_params = nullptr;  // pinned
  GpuCropParams* device_params = nullptr;
  std::size_t params_capacity = 0;

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State();

  void stage(std::size_t bytes) {
    if (bytes <= staged_bytes) return;
    check_cuda(cudaStreamSynchronize(stream), "nvJPEG decoder: cudaStreamSynchronize");
    if (staged) cudaFreeHost(staged);
    staged = nullptr;
    staged_bytes = bytes + bytes / 4;
    check_cuda(cudaMallocHost(reinterpret_cast<void**>(&staged), staged_bytes), "nvJPEG decoder: cudaMallocHost");
  }

  void reserve(std::size_t bytes, std::size_t jobs) {
    if (bytes > decoded_bytes) {
      check_cuda(cudaStreamSynchronize(stream), "nvJPEG decoder: cudaStreamSynchronize");
      if (decoded) cudaFree(decoded);
      decoded = nullptr;
      decoded_bytes = bytes + bytes / 4;  // room to grow without reallocating every batch
      check_cuda(cudaMalloc(reinterpret_cast<void**>(&decoded), decoded_bytes), "nvJPEG decoder: cudaMalloc");
    }
    if (jobs > params_capacity) {
      check_cuda(cudaStreamSynchronize(stream), "nvJPEG decoder: cudaStreamSynchronize");
      if (host_params) cudaFreeHost(host_params);
      if (device_params) cudaFree(device_params);
      host_params = nullptr;
      device_params = nullptr;
      params_capacity = jobs;
      check_cuda(cudaMallocHost(reinterpret_cast<void**>(&host_params), jobs * sizeof(GpuCropParams)),
                 "nvJPEG decoder: cudaMallocHost");
      check_cuda(cudaMalloc(reinterpret_cast<void**>(&device_params), jobs * sizeof(GpuCropParams)),
                 "nvJPEG decoder: cudaMalloc");
    }
  }
};

GpuJpegDecoder::GpuJpegDecoder(int device, int out_size, bool allow_hardware) : s_(new State) {
  try {
    s_->device = device;
    s_->out_size = out_size;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || device < 0 || device >= devices)
      throw DataError("nvJPEG decoder: no CUDA device " + std::to_string(device) + " (this machine has " +
                      std::to_string(devices) + ")");
    check_cuda(cudaSetDevice(device), "nvJPEG decoder: cudaSetDevice");
    s_->shared = shared_handle(device, allow_hardware);
    if (!s_->shared->hardware)
      check_nvjpeg(nvjpegJpegStateCreate(s_->shared->handle, &s_->own_state), "nvjpegJpegStateCreate");
    check_nvjpeg(nvjpegJpegStreamCreate(s_->shared->handle, &s_->stream_info), "nvjpegJpegStreamCreate");
    // The highest priority: a batch's few small kernels go ahead of the training step's queued
    // blocks instead of waiting behind them, so the loader keeps ahead on a busy GPU.
    int least = 0, greatest = 0;
    check_cuda(cudaDeviceGetStreamPriorityRange(&least, &greatest), "nvJPEG decoder: cudaDeviceGetStreamPriorityRange");
    check_cuda(cudaStreamCreateWithPriority(&s_->stream, cudaStreamNonBlocking, greatest),
               "nvJPEG decoder: cudaStreamCreateWithPriority");
  } catch (...) {
    delete s_;
    throw;
  }
}

GpuJpegDecoder::State::~State() {
  if (stream) cudaStreamSynchronize(stream);
  if (decoded) cudaFree(decoded);
  if (staged) cudaFreeHost(staged);
  if (device_params) cudaFree(device_params);
  if (host_params) cudaFreeHost(host_params);
  if (stream_info) nvjpegJpegStreamDestroy(stream_info);
  if (own_state) nvjpegJpegStateDestroy(own_state);
  if (stream) cudaStreamDestroy(stream);
}

GpuJpegDecoder::~GpuJpegDecoder() {
  delete s_;
}

std::string GpuJpegDecoder::backend() const {
  return s_->shared->hardware ? "nvJPEG hardware decoder" : "nvJPEG CUDA decoder";
}

bool GpuJpegDecoder::hardware() const {
  return s_->shared->hardware;
}

bool GpuJpegDecoder::probe(const std::uint8_t* data, std::size_t size, GpuJpegShape& shape, bool& batchable,
                           std::string& error) {
  int components = 0;
  nvjpegChromaSubsampling_t subsampling{};
  int widths[NVJPEG_MAX_COMPONENT] = {}, heights[NVJPEG_MAX_COMPONENT] = {};
  const auto status = nvjpegGetImageInfo(s_->shared->handle, data, size, &components, &subsampling, widths, heights);
  if (status != NVJPEG_STATUS_SUCCESS || widths[0] <= 0 || heights[0] <= 0) {
    error = "not a JPEG nvJPEG can read (status " + std::to_string(status) + ")";
    return false;
  }
  shape.width = widths[0];
  shape.height = heights[0];
  shape.grey = components == 1 || widths[1] <= 0 || heights[1] <= 0;
  shape.chroma_width = shape.grey ? shape.width : widths[1];
  shape.chroma_height = shape.grey ? shape.height : heights[1];
  // Grey and YCbCr only: CMYK and odd layouts are the CPU decoder's.
  batchable = (components == 1 || components == 3) && subsampling != NVJPEG_CSS_UNKNOWN;
  if (batchable && s_->shared->hardware) {
    int supported = -1;
    batchable =
        nvjpegJpegStreamParseHeader(s_->shared->handle, data, size, s_->stream_info) == NVJPEG_STATUS_SUCCESS &&
        nvjpegDecodeBatchedSupported(s_->shared->handle, s_->stream_info, &supported) == NVJPEG_STATUS_SUCCESS &&
        supported == 0;
  }
  return true;
}

bool GpuJpegDecoder::decode_crops(const std::vector<GpuCropJob>& jobs, const std::vector<std::uint8_t*>& outs,
                                  std::string& error) {
  if (jobs.empty()) {
    synchronize();
    return true;
  }
  check_cuda(cudaSetDevice(s_->device), "nvJPEG decoder: cudaSetDevice");
  std::vector<GpuJpegShape> shapes(jobs.size());
  std::vector<std::size_t> offsets(jobs.size());  // each image's Y, Cb and Cr planes in `decoded`
  std::size_t total = 0, file_bytes = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    GpuJpegShape& shape = shapes[i];
    shape = jobs[i].shape;
    if (shape.width <= 0) {  // not probed: the header once more
      bool batchable = false;
      if (!probe(jobs[i].data, jobs[i].size, shape, batchable, error)) return false;
    }
    offsets[i] = total;
    total += static_cast<std::size_t>(shape.width) * static_cast<std::size_t>(shape.height) +
             2 * static_cast<std::size_t>(shape.chroma_width) * static_cast<std::size_t>(shape.chroma_height);
    file_bytes += jobs[i].size;
  }
  s_->reserve(total, jobs.size());

  std::vector<const unsigned char*> data(jobs.size());
  std::vector<std::size_t> sizes(jobs.size());
  std::vector<nvjpegImage_t> images(jobs.size());
  s_->stage(file_bytes);
  std::size_t staged_at = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const GpuJpegShape& shape = shapes[i];
    std::memcpy(s_->staged + staged_at, jobs[i].data, jobs[i].size);
    data[i] = s_->staged + staged_at;
    staged_at += jobs[i].size;
    sizes[i] = jobs[i].size;
    images[i] = nvjpegImage_t{};
    std::uint8_t* base = s_->decoded + offsets[i];
    const auto luma = static_cast<std::size_t>(shape.width) * static_cast<std::size_t>(shape.height);
    const auto chroma = static_cast<std::size_t>(shape.chroma_width) * static_cast<std::size_t>(shape.chroma_height);
    images[i].channel[0] = base;
    images[i].pitch[0] = static_cast<std::size_t>(shape.width);
    images[i].channel[1] = base + luma;
    images[i].channel[2] = base + luma + chroma;
    images[i].pitch[1] = images[i].pitch[2] = static_cast<std::size_t>(shape.chroma_width);
  }
  const int n = static_cast<int>(jobs.size());
  // Held until the crops are written (synchronize below): the shared state is busy until then.
  std::unique_lock<std::mutex> one_decode_at_a_time(s_->shared->decoding, std::defer_lock);
  if (s_->shared->hardware) one_decode_at_a_time.lock();
  const nvjpegJpegState_t state = s_->shared->hardware ? s_->shared->hardware_state : s_->own_state;
  auto status = nvjpegDecodeBatchedInitialize(s_->shared->handle, state, n, 1, NVJPEG_OUTPUT_YUV);
  if (status == NVJPEG_STATUS_SUCCESS)
    status = nvjpegDecodeBatched(s_->shared->handle, state, data.data(), sizes.data(), images.data(), s_->stream);
  if (status != NVJPEG_STATUS_SUCCESS) {
    cudaStreamSynchronize(s_->stream);
    cudaGetLastError();
    error = "nvJPEG could not decode the batch (status " + std::to_string(status) + ")";
    return false;
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const GpuJpegShape& shape = shapes[i];
    GpuCropParams& p = s_->host_params[i];
    p = GpuCropParams{};
    p.luma = images[i].channel[0];
    p.pitch = static_cast<int>(images[i].pitch[0]);
    p.width = shape.width;
    p.height = shape.height;
    if (!shape.grey) {
      p.cb = images[i].channel[1];
      p.cr = images[i].channel[2];
    }
    p.chroma_pitch = static_cast<int>(images[i].pitch[1]);
    p.chroma_width = shape.chroma_width;
    p.chroma_height = shape.chroma_height;
    p.x = jobs[i].box.x;
    p.y = jobs[i].box.y;
    p.crop_width = jobs[i].box.width;
    p.crop_height = jobs[i].box.height;
    p.flip = jobs[i].flip ? 1 : 0;
    p.out = outs[i];
  }
  check_cuda(cudaMemcpyAsync(s_->device_params, s_->host_params, jobs.size() * sizeof(GpuCropParams),
                             cudaMemcpyHostToDevice, s_->stream),
             "nvJPEG decoder: cudaMemcpyAsync");
  launch_resize_crops(s_->device_params, n, s_->out_size, s_->stream);
  check_cuda(cudaGetLastError(), "nvJPEG decoder: the crop kernel");
  // Also keeps the pinned parameters and the decoded images alive until the kernel has read them.
  synchronize();
  return true;
}

void GpuJpegDecoder::upload(const std::uint8_t* host, std::uint8_t* device_out) {
  const auto bytes = static_cast<std::size_t>(s_->out_size) * static_cast<std::size_t>(s_->out_size) * 3;
  check_cuda(cudaMemcpyAsync(device_out, host, bytes, cudaMemcpyHostToDevice, s_->stream),
             "nvJPEG decoder: cudaMemcpyAsync");
}

void GpuJpegDecoder::synchronize() {
  check_cuda(cudaStreamSynchronize(s_->stream), "nvJPEG decoder: cudaStreamSynchronize");
}

DeviceBatchBuffers::DeviceBatchBuffers(int device, std::size_t bytes, int count)
    : device_(device),
      buffers_(static_cast<std::size_t>(count)),
      released_(static_cast<std::size_t>(count)),
      order_(count) {
  check_cuda(cudaSetDevice(device), "batch buffers: cudaSetDevice");
  for (int i = 0; i < count; ++i) {
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&buffers_[static_cast<std::size_t>(i)]), bytes),
               "batch buffers: cudaMalloc");
    cudaEvent_t event = nullptr;
    check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "batch buffers: cudaEventCreate");
    released_[static_cast<std::size_t>(i)] = event;
  }
}

DeviceBatchBuffers::~DeviceBatchBuffers() {
  cudaSetDevice(device_);
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    if (released_[i]) {
      cudaEventSynchronize(static_cast<cudaEvent_t>(released_[i]));
      cudaEventDestroy(static_cast<cudaEvent_t>(released_[i]));
    }
    if (buffers_[i]) cudaFree(buffers_[i]);
  }
}

int DeviceBatchBuffers::acquire() {
  const int buffer = order_.take();
  // The consumer's copy out of it has finished.
  check_cuda(cudaSetDevice(device_), "batch buffers: cudaSetDevice");
  check_cuda(cudaEventSynchronize(static_cast<cudaEvent_t>(released_[static_cast<std::size_t>(buffer)])),
             "batch buffers: cudaEventSynchronize");
  return buffer;
}

std::uint8_t* DeviceBatchBuffers::data(int buffer) const {
  return buffers_[static_cast<std::size_t>(buffer)];
}

void DeviceBatchBuffers::release(int buffer, void* stream) {
  check_cuda(cudaEventRecord(static_cast<cudaEvent_t>(released_[static_cast<std::size_t>(buffer)]),
                             static_cast<cudaStream_t>(stream)),
             "batch buffers: cudaEventRecord");
  order_.give_back(buffer);
}

#else  // no nvJPEG in this build

namespace {
[[noreturn]] void no_nvjpeg() {
  throw DataError(
      "this xpuperf was built without nvJPEG (it needs the CUDA toolkit with libnvjpeg at build time); "
      "use jpeg_decoder: cpu");
}
}  // namespace

bool have_gpu_jpeg() {
  return false;
}

struct GpuJpegDecoder::State {};
GpuJpegDecoder::GpuJpegDecoder(int, int, bool) {
  no_nvjpeg();
}
GpuJpegDecoder::~GpuJpegDecoder() {
  delete s_;
}
std::string GpuJpegDecoder::backend() const {
  return "none";
}
bool GpuJpegDecoder::hardware() const {
  return false;
}
bool GpuJpegDecoder::probe(const std::uint8_t*, std::size_t, GpuJpegShape&, bool&, std::string&) {
  no_nvjpeg();
}
bool GpuJpegDecoder::decode_crops(const std::vector<GpuCropJob>&, const std::vector<std::uint8_t*>&, std::string&) {
  no_nvjpeg();
}
void GpuJpegDecoder::upload(const std::uint8_t*, std::uint8_t*) {
  no_nvjpeg();
}
void GpuJpegDecoder::synchronize() {
  no_nvjpeg();
}
DeviceBatchBuffers::DeviceBatchBuffers(int, std::size_t, int) : device_(-1), order_(0) {
  no_nvjpeg();
}
DeviceBatchBuffers::~DeviceBatchBuffers() = default;
int DeviceBatchBuffers::acquire() {
  no_nvjpeg();
}
std::uint8_t* DeviceBatchBuffers::data(int) const {
  no_nvjpeg();
}
void DeviceBatchBuffers::release(int, void*) {
  no_nvjpeg();
}

#endif

}  // namespace xpuperf::data
