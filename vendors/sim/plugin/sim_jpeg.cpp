// The sim vendor's JPEG decoder for the image loader (data/device_jpeg.h), `jpeg_decoder: device` on
// sim: libjpeg-turbo on the loader's threads, each crop written into the sim device's memory, as a
// vendor's decoder writes into its chip's. The crops are the CPU decoder's byte for byte, so a
// vision case's curve on sim with it is the CPU's: the test of the device-decoder path in CI.

#include "sim_jpeg.h"

#include <cstring>
#include <memory>

#include "sim_memory.h"
#include "xpuperf/data/device_jpeg.h"
#include "xpuperf/data/idx.h"
#include "xpuperf/data/jpeg.h"
#include "xpuperf/data/release_order.h"

namespace xpuperf::data {
// Weak: the plug-in reaches xpuperf-torch's registry, which a build whose cases read no images may
// leave out; the plug-in then loads without its decoder.
void register_device_jpeg(DeviceJpegBackend backend) __attribute__((weak));
}  // namespace xpuperf::data

namespace xpuperf::sim {
namespace {

class SimJpegDecoder : public data::DeviceJpegDecoder {
 public:
  explicit SimJpegDecoder(int out_size) : out_size_(out_size) {}

  std::string backend() const override { return "sim decoder (libjpeg-turbo into sim memory)"; }

  bool probe(const std::uint8_t* data, std::size_t size, data::DeviceJpegShape& shape, bool& batchable,
             std::string& error) override {
    if (!codec_.read_header(data, size, shape.width, shape.height, error)) return false;
    shape.chroma_width = shape.width;  // decoded to RGB whole: the planes are not the sim's concern
    shape.chroma_height = shape.height;
    batchable = true;  // libjpeg-turbo reads every JPEG, progressive and CMYK ones too
    return true;
  }

  bool decode_crops(const std::vector<data::DeviceCropJob>& jobs, const std::vector<std::uint8_t*>& outs,
                    std::string& error) override {
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (!codec_.decode(jobs[i].data, jobs[i].size, image_, error)) return false;
      const MemoryGuard open({outs[i]});
      data::resize_crop(image_, jobs[i].box, out_size_, out_size_, jobs[i].flip, outs[i]);
    }
    return true;
  }

  void upload(const std::uint8_t* host, std::uint8_t* device_out) override {
    const MemoryGuard open({device_out});
    std::memcpy(device_out, host, static_cast<std::size_t>(out_size_) * static_cast<std::size_t>(out_size_) * 3);
  }

  void synchronize() override {}  // the sim's work is done when its call returns

 private:
  int out_size_;
  data::JpegCodec codec_;  // one a decoder, and a decoder a loader thread
  data::RgbImage image_;
};

// Batch buffers in the sim's memory. The sim runs its work as it is queued, so a buffer is free
// again as soon as the consumer releases it.
class SimBatchBuffers : public data::DeviceBatchBuffers {
 public:
  SimBatchBuffers(std::size_t bytes, int count) : order_(count) {
    for (int i = 0; i < count; ++i) buffers_.push_back(static_cast<std::uint8_t*>(allocate_block(bytes)));
  }
  ~SimBatchBuffers() override {
    for (auto* b : buffers_) free_block(b);
  }
  SimBatchBuffers(const SimBatchBuffers&) = delete;
  SimBatchBuffers& operator=(const SimBatchBuffers&) = delete;

  int acquire() override { return order_.take(); }
  std::uint8_t* data(int buffer) const override { return buffers_[static_cast<std::size_t>(buffer)]; }
  void release(int buffer, void*) override { order_.give_back(buffer); }

 private:
  std::vector<std::uint8_t*> buffers_;
  data::ReleaseOrder order_;
};

}  // namespace

bool register_jpeg_decoder() {
  if (!data::register_device_jpeg) return false;
  data::DeviceJpegBackend backend;
  backend.name = "sim";
  backend.device_type = "sim";
  backend.make_decoder = [](int, int out_size, bool) {
    return std::unique_ptr<data::DeviceJpegDecoder>(std::make_unique<SimJpegDecoder>(out_size));
  };
  backend.make_buffers = [](int, std::size_t bytes, int count) {
    return std::unique_ptr<data::DeviceBatchBuffers>(std::make_unique<SimBatchBuffers>(bytes, count));
  };
  data::register_device_jpeg(std::move(backend));
  return true;
}

}  // namespace xpuperf::sim
