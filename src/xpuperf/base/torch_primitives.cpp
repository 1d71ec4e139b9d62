// The base cases through PyTorch's primitives on whatever device the vendor brings (backend
// "torch"): FlagPerf's vendor-neutral figure, which runs on any chip with a LibTorch backend and
// sits in the report beside the vendor's own implementation and the datasheet. GEMM per
// precision (torch::mm, the same exact inputs and check as the other GEMMs), memory bandwidth
// (BabelStream's four kernels as tensor operations) and host↔device copies.

#include <torch/torch.h>

#include <cmath>

#include "xpuperf/base/base_benchmark.h"
#include "xpuperf/base/gemm_check.h"
#include "xpuperf/base/stream_kernels.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/vendor_runtime.h"

namespace xpuperf::base {
namespace {

// The vendor's device: the CPU for the cpu vendor, else its accelerator `index`.
torch::Device device_of(const BaseContext& ctx) {
  const torchrt::ActiveVendor* vendor = torchrt::active_vendor();
  if (vendor && vendor->spec.declared && vendor->spec.device_type == "cpu") return torch::kCPU;
  return torchrt::choose_device("auto", ctx.device);
}

std::string device_words(const torch::Device& device) {
  return torchrt::device_text(device.str());
}

std::string no_device_reason(const BaseContext& ctx) {
  try {
    device_of(ctx);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

// Seconds of `call`, its work on the device finished.
template <typename Call>
double timed(const torch::Device& device, Call call) {
  torchrt::synchronize(device);
  const double t0 = steady_seconds();
  call();
  torchrt::synchronize(device);
  return steady_seconds() - t0;
}

torch::ScalarType type_of(const GemmPrecision& p) {
  if (p.name == "FP64") return torch::kFloat64;
  if (p.name == "FP16") return torch::kFloat16;
  if (p.name == "BF16") return torch::kBFloat16;
  return torch::kFloat32;
}

torch::Tensor levels(std::int64_t size, std::uint32_t seed, torch::ScalarType type, const torch::Device& device) {
  auto host = torch::empty({size, size}, torch::kFloat32);
  float* v = host.data_ptr<float>();
  for (std::int64_t i = 0; i < size * size; ++i)
    v[i] = static_cast<float>(gemm_level(static_cast<std::uint64_t>(i), seed) / 8.0);
  return host.to(type).to(device);
}

class TorchGemm : public BaseBenchmark {
 public:
  std::string filter(const BaseContext& ctx) override { return no_device_reason(ctx); }

  BaseResult run(const BaseContext& ctx) override {
    const GemmPrecision* p = gemm_precision(ctx.metric);
    const torch::Device device = device_of(ctx);
    const std::int64_t size = ctx.config.get_int("torch_size");
    const torch::NoGradGuard no_grad;
    const torch::ScalarType type = type_of(*p);
    // gemm_check.h's layout: `at` (row-major) holds A^T, row i being A's column i, and `bt` holds
    // B^T, row j being B's column j; C = A^T B.
    const torch::Tensor at = levels(size, 1, type, device), bt = levels(size, 2, type, device);
    const torch::Tensor b = bt.t();
    torch::Tensor c = torch::empty({size, size}, at.options());
    const auto gemm = [&] { torch::mm_out(c, at, b); };
    for (std::int64_t i = 0; i < ctx.config.get_int("warmup"); ++i) gemm();
    const double flops = 2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size);
    const double window = ctx.config.get_number("seconds");
    std::vector<double> rates;
    BaseResult r;
    r.started_unix = unix_seconds();
    for (std::int64_t rep = 0; rep < ctx.config.get_int("repeats"); ++rep) {
      std::int64_t calls = 0;
      double spent = 0;
      while (spent < window || calls == 0) {
        spent += timed(device, gemm);
        ++calls;
      }
      rates.push_back(flops * static_cast<double>(calls) / spent / 1e12);
    }
    r.ended_unix = unix_seconds();
    add_gemm_figures(*p, rates, r);
    const torch::Tensor result = c.to(torch::kCPU, torch::kFloat64);
    const auto* values = result.data_ptr<double>();
    check_gemm_result(
        *p, size, static_cast<int>(ctx.config.get_int("check_samples")),
        [&](std::int64_t i, std::int64_t j) { return values[i * size + j]; }, r);
    r.implementation = "LibTorch mm on " + device_words(device) + " (" + std::string(c10::toString(type)) + ")";
    return r;
  }
};

class TorchBandwidth : public BaseBenchmark {
 public:
  std::string filter(const BaseContext& ctx) override { return no_device_reason(ctx); }

  BaseResult run(const BaseContext& ctx) override {
    const torch::Device device = device_of(ctx);
    const torch::NoGradGuard no_grad;
    const std::int64_t n = ctx.config.get_int("torch_array_mib") * (1 << 20) / 8;
    const auto options = torch::TensorOptions().dtype(torch::kFloat64).device(device);
    torch::Tensor a = torch::full({n}, 1.0, options), b = torch::full({n}, 2.0, options),
                  c = torch::zeros({n}, options);
    torch::Tensor sum = torch::zeros({}, options);
    const double scalar = kStreamScalar;
    std::vector<StreamKernel> kernels = stream_kernels(static_cast<double>(n) * 8);
    BaseResult r;
    r.started_unix = unix_seconds();
    const std::int64_t repeats = ctx.config.get_int("repeats");
    for (std::int64_t rep = 0; rep < repeats; ++rep)
      for (auto& k : kernels) {
        const double seconds = timed(device, [&] {
          if (k.name == "read")
            torch::sum_out(sum, a);
          else if (k.name == "write")
            c.fill_(scalar);
          else if (k.name == "copy")
            c.copy_(a);
          else
            torch::add_out(a, b, c, scalar);
        });
        k.rates.push_back(k.bytes / seconds / 1e9);
      }
    r.ended_unix = unix_seconds();
    const StreamExpected expected = stream_expected(repeats);
    const double ea = expected.a, ec = expected.c;
    const double wrong_a = (a.cpu() - ea).abs().max().item<double>(),
                 wrong_c = (c.cpu() - ec).abs().max().item<double>();
    r.correct = wrong_a <= 1e-12 * ea && wrong_c <= 1e-12 * ec;
    r.check = "every element of a and c after " + std::to_string(repeats) +
              " rounds against the recurrence (largest errors " + std::to_string(wrong_a) + ", " +
              std::to_string(wrong_c) + ")";
    add_stream_figures(kernels, {"read", "copy", "triad"}, r);
    r.implementation = "LibTorch tensor operations on " + device_words(device) + ", arrays of " +
                       std::to_string(ctx.config.get_int("torch_array_mib")) + " MiB";
    return r;
  }
};

// Host → device (h2d) or device → host (d2h) copies over the config's sizes.
class TorchTransfer : public BaseBenchmark {
 public:
  explicit TorchTransfer(bool to_device) : to_device_(to_device) {}
  std::string filter(const BaseContext& ctx) override {
    const std::string why = no_device_reason(ctx);
    if (!why.empty()) return why;
    return device_of(ctx).is_cpu() ? "the cpu vendor has no device memory to copy to" : "";
  }

  BaseResult run(const BaseContext& ctx) override {
    const torch::Device device = device_of(ctx);
    const std::int64_t repeats = ctx.config.get_int("repeats");
    BaseResult r;
    r.started_unix = unix_seconds();
    std::vector<double> last;
    bool correct = true;
    for (const auto& mib_text : ctx.config.get_string_list("sizes_mib")) {
      const std::int64_t bytes = std::stoll(mib_text) << 20;
      const auto host = torch::arange(bytes, torch::kUInt8);
      auto on_device = torch::empty({bytes}, torch::TensorOptions().dtype(torch::kUInt8).device(device));
      auto back = torch::empty({bytes}, torch::kUInt8);
      on_device.copy_(host);
      std::vector<double> rates;
      for (std::int64_t rep = 0; rep < repeats; ++rep)
        rates.push_back(static_cast<double>(bytes) / 1e9 /
                        timed(device, [&] { to_device_ ? on_device.copy_(host) : back.copy_(on_device); }));
      if (!to_device_) correct = correct && torch::equal(back, host);
      r.details["sizes"].push_back(
          {{"mib", std::stoll(mib_text)}, {"best_gbps", best_of(rates)}, {"median_gbps", median_of(rates)}});
      last = rates;
    }
    r.ended_unix = unix_seconds();
    r.figures.push_back({"largest size best", best_of(last), "GB/s", "host_link_gbps"});
    r.figures.push_back({"largest size median", median_of(last), "GB/s", ""});
    r.correct = correct;
    r.check = to_device_ ? "copies of a byte ramp (read back in d2h)" : "every byte copied back equals the host's";
    r.implementation = "LibTorch copy_ between the host and " + device_words(device);
    return r;
  }

 private:
  bool to_device_;
};

XPUPERF_REGISTER_BASE("computation-FP32", "torch", TorchGemm);
XPUPERF_REGISTER_BASE("computation-BF16", "torch", TorchGemm);
XPUPERF_REGISTER_BASE("computation-FP16", "torch", TorchGemm);
XPUPERF_REGISTER_BASE("computation-FP64", "torch", TorchGemm);
XPUPERF_REGISTER_BASE("main_memory-bandwidth", "torch", TorchBandwidth);
static const bool h2d_registered =
    register_base("interconnect-h2d", "torch", [] { return std::make_unique<TorchTransfer>(true); });
static const bool d2h_registered =
    register_base("interconnect-d2h", "torch", [] { return std::make_unique<TorchTransfer>(false); });

}  // namespace
}  // namespace xpuperf::base
