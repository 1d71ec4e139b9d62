#include "xpuperf/data/device_jpeg.h"

#include <map>
#include <mutex>

namespace xpuperf::data {
namespace {

struct Backends {
  std::mutex mutex;
  std::map<std::string, DeviceJpegBackend> by_device;
};

Backends& backends() {
  static Backends b;
  return b;
}

}  // namespace

void register_device_jpeg(DeviceJpegBackend backend) {
  auto& b = backends();
  std::lock_guard<std::mutex> lock(b.mutex);
  const std::string type = backend.device_type;
  b.by_device[type] = std::move(backend);
}

// Pointers into the map stay valid: a std::map's elements do not move, and a replacement (another
// backend for the same device) is made as a plug-in loads, before any loader starts.
const DeviceJpegBackend* device_jpeg_for_device(const std::string& device_type) {
  auto& b = backends();
  std::lock_guard<std::mutex> lock(b.mutex);
  const auto it = b.by_device.find(device_type);
  return it == b.by_device.end() ? nullptr : &it->second;
}

const DeviceJpegBackend* device_jpeg_named(const std::string& name) {
  auto& b = backends();
  std::lock_guard<std::mutex> lock(b.mutex);
  for (const auto& [type, backend] : b.by_device)
    if (backend.name == name) return &backend;
  return nullptr;
}

std::vector<std::string> device_jpeg_names() {
  auto& b = backends();
  std::lock_guard<std::mutex> lock(b.mutex);
  std::vector<std::string> names;
  for (const auto& [type, backend] : b.by_device) names.push_back(backend.name);
  return names;
}

}  // namespace xpuperf::data
