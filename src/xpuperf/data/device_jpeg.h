#pragma once
// JPEG decoding on an accelerator, as its vendor's plug-in brings it (NVIDIA's: its GPU decoder, in
// vendors/nvidia/plugin/data; the simulated accelerator's: libjpeg-turbo writing into its memory).
// The image loader hands the device's decoder a batch of files; the decoder writes each image's
// crop, resized and flipped, into a channels-last batch in device memory, with the same crop
// arithmetic as the CPU path (resize_crop), so that the decoders differ only by their inverse DCTs.
// Torch-free: a decoder is found by the name of the device type it decodes on ("sim").

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "xpuperf/data/image_transforms.h"

namespace xpuperf::data {

// What probe() reads from a file's header: the image's size and its chroma planes' (for a grey
// image, planes of the image's size that the decoder may fill and the crop ignores).
struct DeviceJpegShape {
  int width = 0, height = 0;
  int chroma_width = 0, chroma_height = 0;
  bool grey = false;
};

// One image of a batch: its file's bytes (on the host), its shape as probe() read it (width 0:
// unknown, decode_crops reads the header again), the box of the decoded image to keep and whether
// to mirror it.
struct DeviceCropJob {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  DeviceJpegShape shape;
  CropBox box;
  bool flip = false;
};

// One loader thread's decoder; crops come out out_size × out_size × 3 bytes.
class DeviceJpegDecoder {
 public:
  virtual ~DeviceJpegDecoder() = default;

  // What decodes, for the log ("... hardware decoder").
  virtual std::string backend() const = 0;

  // Reads a file's header: its shape, and whether the batched decoder takes it (NVIDIA's hardware
  // decoder takes baseline JPEGs only; what it refuses goes to the CPU). False with `error` for
  // what is not a JPEG. The file is not decoded: a corrupt body passes.
  virtual bool probe(const std::uint8_t* data, std::size_t size, DeviceJpegShape& shape, bool& batchable,
                     std::string& error) = 0;

  // Decodes the jobs (each probed batchable) and writes job i's crop to outs[i] (device memory);
  // returns when it is there. False with `error` when the decoder refuses the batch (a file whose
  // body is corrupt): the loader then decodes one job at a time to find which.
  virtual bool decode_crops(const std::vector<DeviceCropJob>& jobs, const std::vector<std::uint8_t*>& outs,
                            std::string& error) = 0;

  // Copies a crop made on the host (out_size² × 3 bytes) to `device_out`; done when the next
  // decode_crops returns or after synchronize().
  virtual void upload(const std::uint8_t* host, std::uint8_t* device_out) = 0;
  virtual void synchronize() = 0;
};

// Batch-sized buffers in device memory, reused: a loader fills one, the consumer copies it out and
// releases it with the stream the copy went on; the next acquire of that buffer waits for the copy.
// Buffers are acquired in the order they were released (release_order.h says why).
class DeviceBatchBuffers {
 public:
  virtual ~DeviceBatchBuffers() = default;
  // The buffer released longest ago; blocks while every buffer is in use.
  virtual int acquire() = 0;
  virtual std::uint8_t* data(int buffer) const = 0;
  // `stream` (the device runtime's handle, torchrt::native_stream; null: the device's default)
  // holds the last work that reads the buffer.
  virtual void release(int buffer, void* stream) = 0;
};

// What a vendor registers (register_device_jpeg), from its plug-in's init or as its built-in
// plug-in loads.
struct DeviceJpegBackend {
  std::string name;         // what jpeg_decoder and `xpuperf data decode-rate --decoder` may call it
  std::string device_type;  // the device it decodes on, as LibTorch names the type ("sim")
  // On device `device` (its index), crops of out_size × out_size; `allow_hardware` false asks for
  // the decoder's software path where it has two (tests). Throws DataError when it cannot start.
  std::function<std::unique_ptr<DeviceJpegDecoder>(int device, int out_size, bool allow_hardware)> make_decoder;
  std::function<std::unique_ptr<DeviceBatchBuffers>(int device, std::size_t bytes, int count)> make_buffers;
  // Run before the process's device context exists, by a process that will decode on the device;
  // may be empty (NVIDIA's raises its hardware queues: its source says why).
  std::function<void()> before_device;
};

// A second backend for the same device type replaces the first.
void register_device_jpeg(DeviceJpegBackend backend);
// The decoder of a device type, or of a name; null where none is registered.
const DeviceJpegBackend* device_jpeg_for_device(const std::string& device_type);
const DeviceJpegBackend* device_jpeg_named(const std::string& name);
// Every registered decoder's name, for help and errors.
std::vector<std::string> device_jpeg_names();

}  // namespace xpuperf::data
