#include "sim_device.h"

#include <ATen/EmptyTensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_local_scalar_dense_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#define XPUPERF_SIM_HOOKS 1
#endif

#include <cstdlib>
#include <string>

#include "sim_memory.h"

namespace xpuperf::sim {

int device_count() {
  if (const char* visible = std::getenv("XPUPERF_SIM_VISIBLE_DEVICES"); visible) {
    int n = *visible ? 1 : 0;
    for (const char* c = visible; *c; ++c) n += *c == ',';
    return n;
  }
  if (const char* text = std::getenv("XPUPERF_SIM_DEVICES"); text && *text) return std::atoi(text);
  return 8;
}

namespace {

constexpr auto kSim = c10::DeviceType::PrivateUse1;

thread_local c10::DeviceIndex t_device = 0;

}  // namespace

int current_device() {
  return t_device;
}

namespace {

void delete_block(void* block) {
  free_block(block);
}

struct SimAllocator final : c10::Allocator {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  c10::DataPtr allocate(size_t bytes) override {
#else
  c10::DataPtr allocate(size_t bytes) const override {
#endif
    void* block = allocate_block(bytes);
    return {block, block, &delete_block, c10::Device(kSim, t_device)};
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return &delete_block;
  }
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    MemoryGuard guard({dest, src});
    std::memcpy(dest, src, count);
  }
#endif
};

SimAllocator g_allocator;

// One stream a device, and every kernel finishes before it returns: events are always complete.
struct SimGuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kSim; }
  c10::Device exchangeDevice(c10::Device d) const override {
    const c10::Device old(kSim, t_device);
    setDevice(d);
    return old;
  }
  c10::Device getDevice() const override { return c10::Device(kSim, t_device); }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kSim, "sim: not a sim device: ", d);
    TORCH_CHECK(d.index() < device_count(), "sim: device ", static_cast<int>(d.index()), " of ", device_count());
    if (d.has_index()) t_device = d.index();
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.has_index()) t_device = d.index();
  }
  c10::Stream getStream(c10::Device d) const noexcept override { return c10::Stream(c10::Stream::DEFAULT, d); }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, s.device());
  }
  c10::DeviceIndex deviceCount() const noexcept override { return static_cast<c10::DeviceIndex>(device_count()); }
  void record(void** /*event*/, const c10::Stream& /*stream*/, const c10::DeviceIndex /*device*/,
              const c10::EventFlag /*flag*/) const override {}
  void block(void* /*event*/, const c10::Stream& /*stream*/) const override {}
  bool queryEvent(void* /*event*/) const override { return true; }
  void destroyEvent(void* /*event*/, const c10::DeviceIndex /*device*/) const noexcept override {}
  bool queryStream(const c10::Stream& /*stream*/) const override { return true; }
  void synchronizeStream(const c10::Stream& /*stream*/) const override {}
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, SimGuardImpl);

// A view of a sim tensor's memory as a CPU tensor: only inside a MemoryGuard.
at::Tensor as_host(const at::Tensor& t) {
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(at::kCPU));
}

const void* storage_of(const at::Tensor& t) {
  return t.defined() && t.has_storage() ? t.storage().data() : nullptr;
}

at::Tensor empty_memory_format(at::IntArrayRef size, c10::optional<at::ScalarType> dtype,
                               c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                               c10::optional<bool> pin_memory, c10::optional<at::MemoryFormat> memory_format) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided, "sim: only strided tensors");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "sim: pinned memory is the CPU's");
  const c10::DeviceGuard device_guard(c10::device_or_default(device));
  return at::detail::empty_generic(size, &g_allocator, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride, c10::optional<at::ScalarType> dtype,
                         c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                         c10::optional<bool> pin_memory) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided, "sim: only strided tensors");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "sim: pinned memory is the CPU's");
  const c10::DeviceGuard device_guard(c10::device_or_default(device));
  return at::detail::empty_strided_generic(
      size, stride, &g_allocator, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), c10::dtype_or_default(dtype));
}

at::Tensor as_strided(const at::Tensor& self, at::IntArrayRef size, at::IntArrayRef stride,
                      c10::optional<int64_t> storage_offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor view(const at::Tensor& self, at::IntArrayRef size) {
  return at::native::view(self, size);
}

at::Tensor reshape_alias(const at::Tensor& self, at::IntArrayRef size, at::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

// Resizing may move the data into a bigger block: the CPU's resize copies it with memcpy, so the
// old and new blocks are opened around it (the new one as it is allocated).
const at::Tensor& resize(const at::Tensor& self, at::IntArrayRef size, c10::optional<at::MemoryFormat> format) {
  MemoryGuard guard({storage_of(self)});
  return at::native::resize_(self, size, format);
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  MemoryGuard guard({storage_of(self), storage_of(dst)});
  at::Tensor dst_view = dst.is_cpu() ? dst : as_host(dst);
  const at::Tensor src_view = self.is_cpu() ? self : as_host(self);
  at::native::copy_(dst_view, src_view, non_blocking);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  resize(dst, self.sizes(), c10::nullopt);
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  MemoryGuard guard({storage_of(self)});
  return at::native::_local_scalar_dense_cpu(as_host(self));
}

at::Tensor& set_storage(at::Tensor& self, at::Storage source) {
  return at::native::set_(self, source);
}

at::Tensor& set_storage_offset(at::Tensor& self, at::Storage source, int64_t offset, at::IntArrayRef size,
                               at::IntArrayRef stride) {
  return at::native::set_storage_cpu_(self, source, offset, size, stride);
}

// Whether `from`'s data may replace `self`'s (Module::to uses set_data). LibTorch 1.13 counts only
// its own dense backends as compatible; a dense sim tensor and a dense CPU one are as compatible
// as a CUDA one and a CPU one. Registered for autograd's key, where the composite one runs.
bool compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  const auto dense_here = [](const at::Tensor& t) {
    return t.layout() == c10::Layout::Strided && (t.is_cpu() || t.device().type() == kSim);
  };
  if (dense_here(self) && dense_here(from)) return true;
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set());
}

void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  at::native::cpu_fallback(op, stack);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("as_strided", as_strided);
  m.impl("view", view);
  m.impl("_reshape_alias", reshape_alias);
  m.impl("resize_", resize);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("set_.source_Storage", set_storage);
  m.impl("set_.source_Storage_storage_offset", set_storage_offset);
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", compatible_shallow_copy_type);
}

// Operators whose composite kernel, which ATen prefers to a backend's fallback, would send an
// unknown device to an "_overrideable" kernel that only throws: they run through the fallback too.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name : {"convolution", "convolution_backward"})
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&fallback>());
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&fallback>());
}

#ifdef XPUPERF_SIM_HOOKS
// What LibTorch 2.x asks of an out-of-tree device beyond its guard (whether it is there, how many,
// which owns a pointer); 1.13 asks none of it.
struct SimHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override { return static_cast<c10::DeviceIndex>(device_count()); }
  bool isPinnedPtr(const void*) const override { return false; }
  c10::Device getDeviceFromPtr(void*) const override { return c10::Device(kSim, t_device); }
  // Random operators run on the host through the fallback, with the CPU's generator; this one
  // exists because seeding (torch::manual_seed) seeds every device's.
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override {
    static const at::Generator generator = at::make_generator<at::CPUGeneratorImpl>();
    return generator;
  }
  at::Generator getNewGenerator(c10::DeviceIndex) const override { return at::make_generator<at::CPUGeneratorImpl>(); }
};
#endif

}  // namespace

void register_device() {
  c10::SetAllocator(kSim, &g_allocator);
#ifdef XPUPERF_SIM_HOOKS
  static SimHooks hooks;  // lives as long as the process, as LibTorch expects
  at::RegisterPrivateUse1HooksInterface(&hooks);
#endif
  install_fault_handler();
}

}  // namespace xpuperf::sim
