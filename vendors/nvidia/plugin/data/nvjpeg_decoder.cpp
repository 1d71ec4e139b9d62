// NVIDIA's JPEG decoder for the image loader (data/device_jpeg.h), registered as `nvjpeg` for CUDA
// devices: a batch of files decoded together through nvJPEG (in the CUDA toolkit) — by the GPU's
// hardware JPEG decoder where it has one (A100, H100, H200), else by nvJPEG's CUDA decoder — then
// each image's crop resized and flipped into a channels-last batch in device memory by one kernel
// (gpu_crop.cu). Built where the CUDA toolkit has nvJPEG, into both binaries.

#include <cuda_runtime.h>
#include <nvjpeg.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "data/gpu_crop.h"
#include "xpuperf/data/data_error.h"
#include "xpuperf/data/device_jpeg.h"
#include "xpuperf/data/release_order.h"

namespace xpuperf::nvidia {

using data::DataError;
using data::DeviceBatchBuffers;
using data::DeviceCropJob;
using data::DeviceJpegShape;

namespace {

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw DataError(std::string(what) + ": " + cudaGetErrorString(status));
}

void check_nvjpeg(nvjpegStatus_t status, const char* what) {
  if (status != NVJPEG_STATUS_SUCCESS)
    throw DataError(std::string(what) + " failed (nvJPEG status " + std::to_string(status) + ")");
}

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

class NvJpegDecoder : public data::DeviceJpegDecoder {
 public:
  NvJpegDecoder(int device, int out_size, bool allow_hardware);
  ~NvJpegDecoder() override;
  NvJpegDecoder(const NvJpegDecoder&) = delete;
  NvJpegDecoder& operator=(const NvJpegDecoder&) = delete;

  std::string backend() const override;
  bool probe(const std::uint8_t* data, std::size_t size, DeviceJpegShape& shape, bool& batchable,
             std::string& error) override;
  // nvJPEG writes each image's Y, Cb and Cr planes as the file holds them (no conversion kernel of
  // its own, which would queue beside the training step); the crop kernel converts to RGB with
  // libjpeg's arithmetic, so the crops are the CPU decoder's but for the inverse DCT.
  bool decode_crops(const std::vector<DeviceCropJob>& jobs, const std::vector<std::uint8_t*>& outs,
                    std::string& error) override;
  void upload(const std::uint8_t* host, std::uint8_t* device_out) override;
  void synchronize() override;

 private:
  void stage(std::size_t bytes);
  void reserve(std::size_t bytes, std::size_t jobs);
  void free_all();

  int device_ = 0, out_size_ = 0;
  // The batch's files, copied into pinned memory: nvJPEG's copies of pageable bytes hold the loader
  // thread for each file (+1–2 % ResNet-50 img/s beside the step on an H100).
  unsigned char* staged_ = nullptr;
  std::size_t staged_bytes_ = 0;
  std::shared_ptr<SharedHandle> shared_;
  nvjpegJpegState_t own_state_ = nullptr;  // the CUDA back end's; the hardware back end uses shared_'s
  nvjpegJpegStream_t stream_info_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::uint8_t* decoded_ = nullptr;  // the batch's decoded_ images, one after another
  std::size_t decoded_bytes_ = 0;
  GpuCropParams* host_params_ = nullptr;  // pinned
  GpuCropParams* device_params_ = nullptr;
  std::size_t params_capacity_ = 0;
};

void NvJpegDecoder::stage(std::size_t bytes) {
  if (bytes <= staged_bytes_) return;
  check_cuda(cudaStreamSynchronize(stream_), "nvJPEG decoder: cudaStreamSynchronize");
  if (staged_) cudaFreeHost(staged_);
  staged_ = nullptr;
  staged_bytes_ = bytes + bytes / 4;
  check_cuda(cudaMallocHost(reinterpret_cast<void**>(&staged_), staged_bytes_), "nvJPEG decoder: cudaMallocHost");
}

void NvJpegDecoder::reserve(std::size_t bytes, std::size_t jobs) {
  if (bytes > decoded_bytes_) {
    check_cuda(cudaStreamSynchronize(stream_), "nvJPEG decoder: cudaStreamSynchronize");
    if (decoded_) cudaFree(decoded_);
    decoded_ = nullptr;
    decoded_bytes_ = bytes + bytes / 4;  // room to grow without reallocating every batch
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&decoded_), decoded_bytes_), "nvJPEG decoder: cudaMalloc");
  }
  if (jobs > params_capacity_) {
    check_cuda(cudaStreamSynchronize(stream_), "nvJPEG decoder: cudaStreamSynchronize");
    if (host_params_) cudaFreeHost(host_params_);
    if (device_params_) cudaFree(device_params_);
    host_params_ = nullptr;
    device_params_ = nullptr;
    params_capacity_ = jobs;
    check_cuda(cudaMallocHost(reinterpret_cast<void**>(&host_params_), jobs * sizeof(GpuCropParams)),
               "nvJPEG decoder: cudaMallocHost");
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&device_params_), jobs * sizeof(GpuCropParams)),
               "nvJPEG decoder: cudaMalloc");
  }
}

NvJpegDecoder::NvJpegDecoder(int device_index, int crop_size, bool allow_hardware) {
  try {
    device_ = device_index;
    out_size_ = crop_size;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || device_ < 0 || device_ >= devices)
      throw DataError("nvJPEG decoder: no CUDA device " + std::to_string(device_) + " (this machine has " +
                      std::to_string(devices) + ")");
    check_cuda(cudaSetDevice(device_), "nvJPEG decoder: cudaSetDevice");
    shared_ = shared_handle(device_, allow_hardware);
    if (!shared_->hardware) check_nvjpeg(nvjpegJpegStateCreate(shared_->handle, &own_state_), "nvjpegJpegStateCreate");
    check_nvjpeg(nvjpegJpegStreamCreate(shared_->handle, &stream_info_), "nvjpegJpegStreamCreate");
    // The highest priority: a batch's few small kernels go ahead of the training step's queued
    // blocks instead of waiting behind them, so the loader keeps ahead on a busy GPU.
    int least = 0, greatest = 0;
    check_cuda(cudaDeviceGetStreamPriorityRange(&least, &greatest), "nvJPEG decoder: cudaDeviceGetStreamPriorityRange");
    check_cuda(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest),
               "nvJPEG decoder: cudaStreamCreateWithPriority");
  } catch (...) {
    free_all();
    throw;
  }
}

NvJpegDecoder::~NvJpegDecoder() {
  free_all();
}

void NvJpegDecoder::free_all() {
  if (stream_) cudaStreamSynchronize(stream_);
  if (decoded_) cudaFree(decoded_);
  if (staged_) cudaFreeHost(staged_);
  if (device_params_) cudaFree(device_params_);
  if (host_params_) cudaFreeHost(host_params_);
  if (stream_info_) nvjpegJpegStreamDestroy(stream_info_);
  if (own_state_) nvjpegJpegStateDestroy(own_state_);
  if (stream_) cudaStreamDestroy(stream_);
  stream_ = nullptr;
  decoded_ = staged_ = nullptr;
  device_params_ = host_params_ = nullptr;
  stream_info_ = nullptr;
  own_state_ = nullptr;
}

std::string NvJpegDecoder::backend() const {
  return shared_->hardware ? "nvJPEG hardware decoder" : "nvJPEG CUDA decoder";
}

bool NvJpegDecoder::probe(const std::uint8_t* data, std::size_t size, DeviceJpegShape& shape, bool& batchable,
                          std::string& error) {
  int components = 0;
  nvjpegChromaSubsampling_t subsampling{};
  int widths[NVJPEG_MAX_COMPONENT] = {}, heights[NVJPEG_MAX_COMPONENT] = {};
  const auto status = nvjpegGetImageInfo(shared_->handle, data, size, &components, &subsampling, widths, heights);
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
  if (batchable && shared_->hardware) {
    int supported = -1;
    batchable = nvjpegJpegStreamParseHeader(shared_->handle, data, size, stream_info_) == NVJPEG_STATUS_SUCCESS &&
                nvjpegDecodeBatchedSupported(shared_->handle, stream_info_, &supported) == NVJPEG_STATUS_SUCCESS &&
                supported == 0;
  }
  return true;
}

bool NvJpegDecoder::decode_crops(const std::vector<DeviceCropJob>& jobs, const std::vector<std::uint8_t*>& outs,
                                 std::string& error) {
  if (jobs.empty()) {
    synchronize();
    return true;
  }
  check_cuda(cudaSetDevice(device_), "nvJPEG decoder: cudaSetDevice");
  std::vector<DeviceJpegShape> shapes(jobs.size());
  std::vector<std::size_t> offsets(jobs.size());  // each image's Y, Cb and Cr planes in `decoded_`
  std::size_t total = 0, file_bytes = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    DeviceJpegShape& shape = shapes[i];
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
  reserve(total, jobs.size());

  std::vector<const unsigned char*> data(jobs.size());
  std::vector<std::size_t> sizes(jobs.size());
  std::vector<nvjpegImage_t> images(jobs.size());
  stage(file_bytes);
  std::size_t staged_at = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const DeviceJpegShape& shape = shapes[i];
    std::memcpy(staged_ + staged_at, jobs[i].data, jobs[i].size);
    data[i] = staged_ + staged_at;
    staged_at += jobs[i].size;
    sizes[i] = jobs[i].size;
    images[i] = nvjpegImage_t{};
    std::uint8_t* base = decoded_ + offsets[i];
    const auto luma = static_cast<std::size_t>(shape.width) * static_cast<std::size_t>(shape.height);
    const auto chroma = static_cast<std::size_t>(shape.chroma_width) * static_cast<std::size_t>(shape.chroma_height);
    images[i].channel[0] = base;
    images[i].pitch[0] = static_cast<std::size_t>(shape.width);
    images[i].channel[1] = base + luma;
    images[i].channel[2] = base + luma + chroma;
    images[i].pitch[1] = images[i].pitch[2] = static_cast<std::size_t>(shape.chroma_width);
  }
  const int n = static_cast<int>(jobs.size());
  // Held until the crops are written (synchronize below): the shared_ state is busy until then.
  std::unique_lock<std::mutex> one_decode_at_a_time(shared_->decoding, std::defer_lock);
  if (shared_->hardware) one_decode_at_a_time.lock();
  const nvjpegJpegState_t state = shared_->hardware ? shared_->hardware_state : own_state_;
  auto status = nvjpegDecodeBatchedInitialize(shared_->handle, state, n, 1, NVJPEG_OUTPUT_YUV);
  if (status == NVJPEG_STATUS_SUCCESS)
    status = nvjpegDecodeBatched(shared_->handle, state, data.data(), sizes.data(), images.data(), stream_);
  if (status != NVJPEG_STATUS_SUCCESS) {
    cudaStreamSynchronize(stream_);
    cudaGetLastError();
    error = "nvJPEG could not decode the batch (status " + std::to_string(status) + ")";
    return false;
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const DeviceJpegShape& shape = shapes[i];
    GpuCropParams& p = host_params_[i];
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
  check_cuda(cudaMemcpyAsync(device_params_, host_params_, jobs.size() * sizeof(GpuCropParams), cudaMemcpyHostToDevice,
                             stream_),
             "nvJPEG decoder: cudaMemcpyAsync");
  launch_resize_crops(device_params_, n, out_size_, stream_);
  check_cuda(cudaGetLastError(), "nvJPEG decoder: the crop kernel");
  // Also keeps the pinned parameters and the decoded_ images alive until the kernel has read them.
  synchronize();
  return true;
}

void NvJpegDecoder::upload(const std::uint8_t* host, std::uint8_t* device_out) {
  const auto bytes = static_cast<std::size_t>(out_size_) * static_cast<std::size_t>(out_size_) * 3;
  check_cuda(cudaMemcpyAsync(device_out, host, bytes, cudaMemcpyHostToDevice, stream_),
             "nvJPEG decoder: cudaMemcpyAsync");
}

void NvJpegDecoder::synchronize() {
  check_cuda(cudaStreamSynchronize(stream_), "nvJPEG decoder: cudaStreamSynchronize");
}

// Batch buffers in CUDA memory; a buffer's release is a CUDA event on the consumer's stream.
class CudaBatchBuffers : public DeviceBatchBuffers {
 public:
  CudaBatchBuffers(int device, std::size_t bytes, int count)
      : device_(device),
        buffers_(static_cast<std::size_t>(count)),
        released_(static_cast<std::size_t>(count)),
        order_(count) {
    try {
      check_cuda(cudaSetDevice(device), "batch buffers: cudaSetDevice");
      for (int i = 0; i < count; ++i) {
        check_cuda(cudaMalloc(reinterpret_cast<void**>(&buffers_[static_cast<std::size_t>(i)]), bytes),
                   "batch buffers: cudaMalloc");
        check_cuda(cudaEventCreateWithFlags(&released_[static_cast<std::size_t>(i)], cudaEventDisableTiming),
                   "batch buffers: cudaEventCreate");
      }
    } catch (...) {
      free_all();
      throw;
    }
  }

  ~CudaBatchBuffers() override { free_all(); }
  CudaBatchBuffers(const CudaBatchBuffers&) = delete;
  CudaBatchBuffers& operator=(const CudaBatchBuffers&) = delete;

  int acquire() override {
    const int buffer = order_.take();
    // The consumer's copy out of it has finished.
    check_cuda(cudaSetDevice(device_), "batch buffers: cudaSetDevice");
    check_cuda(cudaEventSynchronize(released_[static_cast<std::size_t>(buffer)]),
               "batch buffers: cudaEventSynchronize");
    return buffer;
  }

  std::uint8_t* data(int buffer) const override { return buffers_[static_cast<std::size_t>(buffer)]; }

  void release(int buffer, void* stream) override {
    check_cuda(cudaEventRecord(released_[static_cast<std::size_t>(buffer)], static_cast<cudaStream_t>(stream)),
               "batch buffers: cudaEventRecord");
    order_.give_back(buffer);
  }

 private:
  void free_all() {
    cudaSetDevice(device_);
    for (std::size_t i = 0; i < buffers_.size(); ++i) {
      if (released_[i]) {
        cudaEventSynchronize(released_[i]);
        cudaEventDestroy(released_[i]);
        released_[i] = nullptr;
      }
      if (buffers_[i]) cudaFree(buffers_[i]);
      buffers_[i] = nullptr;
    }
  }

  int device_;
  std::vector<std::uint8_t*> buffers_;
  std::vector<cudaEvent_t> released_;
  data::ReleaseOrder order_;
};

// The GPU runs a process's streams through CUDA_DEVICE_MAX_CONNECTIONS hardware queues, 8 unless
// set. nvJPEG's batched hardware decoder copies each image on one of about 15 streams of its own a
// loader thread; some share the training step's queue and wait there behind the step's whole CUDA
// graph while the step waits for their images (ResNet-50 on an H100 at 80 % of its synthetic rate).
// So a process that decodes with nvJPEG sets it to 32, the most, unless the user set it, before its
// CUDA context exists, which reads it.
void raise_hardware_queues() {
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
}

// Registered as the binary loads (the plug-in is built in: vendors/nvidia/vendor.yaml).
const bool nvjpeg_registered = [] {
  data::DeviceJpegBackend backend;
  backend.name = "nvjpeg";
  backend.device_type = "cuda";
  backend.make_decoder = [](int device, int out_size, bool allow_hardware) {
    return std::unique_ptr<data::DeviceJpegDecoder>(std::make_unique<NvJpegDecoder>(device, out_size, allow_hardware));
  };
  backend.make_buffers = [](int device, std::size_t bytes, int count) {
    return std::unique_ptr<DeviceBatchBuffers>(std::make_unique<CudaBatchBuffers>(device, bytes, count));
  };
  backend.before_device = raise_hardware_queues;
  data::register_device_jpeg(std::move(backend));
  return true;
}();

}  // namespace
}  // namespace xpuperf::nvidia
