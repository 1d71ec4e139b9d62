#pragma once
// JPEG decoding on an NVIDIA GPU through nvJPEG (in the CUDA toolkit): a batch of files decoded
// together — by the GPU's hardware JPEG decoder where it has one (A100, H100, H200), else by
// nvJPEG's CUDA decoder — then each image's crop resized and flipped into a channels-last batch in
// device memory by one kernel, with the same crop arithmetic as the CPU path (resize_crop), so the
// two decoders differ only by their inverse DCTs. Torch-free; a build without nvJPEG still has
// these names, and a decoder then fails to start with a message saying why.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "xpuperf/data/image_transforms.h"
#include "xpuperf/data/release_order.h"

namespace xpuperf::data {

// Whether this build has nvJPEG (and CUDA).
bool have_gpu_jpeg();

// What probe() reads from a file's header: the image's size and its chroma planes' (for a grey
// image, planes of the image's size that the decoder may fill and the crop kernel ignores).
struct GpuJpegShape {
  int width = 0, height = 0;
  int chroma_width = 0, chroma_height = 0;
  bool grey = false;
};

// One image of a batch: its file's bytes (on the host), its shape as probe() read it (width 0:
// unknown, decode_crops reads the header again), the box of the decoded image to keep and whether
// to mirror it.
struct GpuCropJob {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  GpuJpegShape shape;
  CropBox box;
  bool flip = false;
};

class GpuJpegDecoder {
 public:
  // On CUDA device `device`; crops come out `out_size` × `out_size` × 3 bytes. The hardware decoder
  // where the GPU has one, unless `allow_hardware` is false (tests); else nvJPEG's CUDA decoder.
  // Throws DataError when this build has no nvJPEG or the device cannot be used.
  GpuJpegDecoder(int device, int out_size, bool allow_hardware = true);
  ~GpuJpegDecoder();
  GpuJpegDecoder(const GpuJpegDecoder&) = delete;
  GpuJpegDecoder& operator=(const GpuJpegDecoder&) = delete;

  // "nvJPEG hardware decoder" or "nvJPEG CUDA decoder".
  std::string backend() const;
  bool hardware() const;

  // Reads a file's header: its shape, and whether the batched decoder takes it (the hardware
  // decoder takes baseline JPEGs only; progressive or CMYK files go to the CPU). False with
  // `error` for what is not a JPEG. The file is not decoded: a corrupt body passes.
  bool probe(const std::uint8_t* data, std::size_t size, GpuJpegShape& shape, bool& batchable, std::string& error);

  // Decodes the jobs (each probed batchable) and writes job i's crop to out + i × out_size² × 3
  // (device memory); returns when it is there. nvJPEG writes each image's Y, Cb and Cr planes as
  // the file holds them (no conversion kernel of its own, which would queue beside the training
  // step); the crop kernel converts to RGB with libjpeg's arithmetic, so the crops are the CPU
  // decoder's but for the inverse DCT. False with `error` when nvJPEG refuses the batch
  // (a file whose body is corrupt): decode one job at a time to find which.
  bool decode_crops(const std::vector<GpuCropJob>& jobs, const std::vector<std::uint8_t*>& outs, std::string& error);

  // Copies a crop made on the host (out_size² × 3 bytes) to `device_out`, on the decoder's stream;
  // done when the next decode_crops returns or after synchronize().
  void upload(const std::uint8_t* host, std::uint8_t* device_out);
  void synchronize();

 private:
  struct State;
  State* s_ = nullptr;
};

// Batch-sized buffers in device memory, reused: a loader fills one, the consumer copies it out and
// releases it with the stream the copy went on; the next acquire of that buffer waits for the copy.
// Buffers are acquired in the order they were released (ReleaseOrder says why).
class DeviceBatchBuffers {
 public:
  DeviceBatchBuffers(int device, std::size_t bytes, int count);
  ~DeviceBatchBuffers();
  DeviceBatchBuffers(const DeviceBatchBuffers&) = delete;
  DeviceBatchBuffers& operator=(const DeviceBatchBuffers&) = delete;

  int acquire();  // the buffer released longest ago; blocks while every buffer is in use
  std::uint8_t* data(int buffer) const;
  // `stream` (a cudaStream_t; null: the default stream) holds the last work that reads the buffer.
  void release(int buffer, void* stream);

 private:
  [[maybe_unused]] int device_;  // read only where the build has nvJPEG
  std::vector<std::uint8_t*> buffers_;
  std::vector<void*> released_;  // cudaEvent_t a buffer
  ReleaseOrder order_;
};

}  // namespace xpuperf::data
