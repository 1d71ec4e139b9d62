// The sim vendor's JPEG decoder for the image loader (data/device_jpeg.h), `jpeg_decoder: device` on
// sim. The sim has no JPEG engine: its decoder takes no file (probe says so), so the loader decodes
// each on its own threads with libjpeg-turbo and the decoder uploads the crops into batches in the
// sim's memory. That runs the device-decoder path of the loader in CI (batch buffers in device
// memory, uploads, the consumer's copy out on the device, the buffers' release), with the CPU
// decoder's crops, so a vision case's curve on sim is the CPU's. A decoder's own batched decode
// (decode_crops) is NVIDIA's to show, on the GPU (tests/unit/data_test.cpp's NvJpeg tests).
//
// It uses nothing of xpuperf's data library but its registry (weak): a binary without the image
// loader (a test program) loads the plug-in all the same.

#include "sim_jpeg.h"

#include <cstring>
#include <memory>

#include "sim_memory.h"
#include "xpuperf/data/device_jpeg.h"
#include "xpuperf/data/release_order.h"

namespace xpuperf::data {
void register_device_jpeg(DeviceJpegBackend backend) __attribute__((weak));
}  // namespace xpuperf::data

namespace xpuperf::sim {
namespace {

class SimJpegDecoder : public data::DeviceJpegDecoder {
 public:
  explicit SimJpegDecoder(int out_size) : out_size_(out_size) {}

  std::string backend() const override { return "sim uploader (libjpeg-turbo on the host, crops into sim memory)"; }

  bool probe(const std::uint8_t*, std::size_t, data::DeviceJpegShape&, bool&, std::string& error) override {
    error = "the sim decodes no JPEG itself";
    return false;
  }

  bool decode_crops(const std::vector<data::DeviceCropJob>& jobs, const std::vector<std::uint8_t*>&,
                    std::string& error) override {
    if (jobs.empty()) return true;  // the loader asks with none, for what it uploaded
    error = "the sim decodes no JPEG itself";
    return false;
  }

  void upload(const std::uint8_t* host, std::uint8_t* device_out) override {
    const MemoryGuard open({device_out});
    std::memcpy(device_out, host, static_cast<std::size_t>(out_size_) * static_cast<std::size_t>(out_size_) * 3);
  }

  void synchronize() override {}  // the sim's work is done when its call returns

 private:
  int out_size_;
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
