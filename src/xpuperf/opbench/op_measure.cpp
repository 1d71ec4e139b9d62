#include "xpuperf/opbench/op_measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/kernel_profile.h"
#include "xpuperf/torchrt/vendor_runtime.h"

namespace xpuperf::opbench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMostReplays = 10000;
using Sizes = std::vector<std::int64_t>;
using Inputs = std::vector<torch::Tensor>;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string sizes_text(const Sizes& sizes) {
  std::string out;
  for (const auto s : sizes) out += (out.empty() ? "" : "x") + std::to_string(s);
  return out;
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// The inputs as the benchmark's dtype rounds them (integer inputs kept), on the CPU.
Inputs rounded(const Inputs& inputs, torch::Dtype dtype) {
  Inputs out;
  for (const auto& t : inputs) out.push_back(t.is_floating_point() ? t.to(dtype) : t);
  return out;
}

Inputs converted(const Inputs& inputs, const torch::Device& device, std::optional<torch::Dtype> dtype = std::nullopt) {
  Inputs out;
  for (const auto& t : inputs) out.push_back(dtype && t.is_floating_point() ? t.to(device, *dtype) : t.to(device));
  return out;
}

double bytes_of(const Inputs& inputs) {
  double b = 0;
  for (const auto& t : inputs) b += static_cast<double>(t.numel() * t.element_size());
  return b;
}

struct Percentiles {
  double median = 0, p10 = 0, p90 = 0, cv = 0;
};

Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  const auto at = [&v](double q) {
    return v[static_cast<std::size_t>(std::floor(q * static_cast<double>(v.size() - 1)))];
  };
  p.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  p.p10 = at(0.1);
  p.p90 = at(0.9);
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double var = 0;
  for (const double x : v) var += (x - mean) * (x - mean);
  var = v.size() > 1 ? var / static_cast<double>(v.size() - 1) : 0;
  p.cv = mean > 0 ? std::sqrt(var) / mean : 0;
  return p;
}

// The inputs' gradients of sum(output · weights), flattened into one tensor.
torch::Tensor gradients(const OperatorSpec& spec, const Inputs& inputs, const Sizes& sizes,
                        const torch::Tensor& weights) {
  Inputs leaves;
  for (const auto& t : inputs) leaves.push_back(t.is_floating_point() ? t.detach().clone().requires_grad_(true) : t);
  const torch::Tensor out = spec.run(leaves, sizes);
  (out * weights.to(out.device(), out.scalar_type())).sum().backward();
  std::vector<torch::Tensor> grads;
  for (const auto& t : leaves)
    if (t.requires_grad()) grads.push_back(t.grad().reshape(-1).to(torch::kCPU, torch::kFloat64));
  return torch::cat(grads);
}

// Time of one call on the device: the vendor's timeline where there is one, else the host clock
// around the call and a synchronisation. Also the host's time to issue each call.
void time_calls(const OperatorCall& call, const std::vector<Inputs>& sets, const torch::Device& device,
                const MeasureOptions& options, OperatorRow& row) {
  torch::Tensor flush = torch::empty({static_cast<std::int64_t>(options.flush_bytes / 4)},
                                     torch::TensorOptions().dtype(torch::kFloat32).device(device));
  for (int i = 0; i < options.warmup; ++i) call(sets[static_cast<std::size_t>(i) % sets.size()]);
  torchrt::synchronize(device);
  auto timeline = torchrt::make_device_timeline(device);
  row.device_timed = timeline != nullptr;
  std::vector<double> device_ms, host_ms;
  std::vector<std::pair<std::size_t, std::size_t>> marks;
  const auto started = Clock::now();
  row.started_unix = unix_seconds();
  constexpr int kMostCalls = 200000;  // a bound for an operator of a microsecond
  for (int i = 0; i < kMostCalls; ++i) {
    if (i >= options.samples && i % options.samples == 0) {  // a block done: enough time under load?
      torchrt::synchronize(device);
      if (ms_since(started) >= options.min_seconds * 1e3) break;
    }
    flush.fill_(static_cast<double>(i % 1000));  // the caches emptied by a kernel that is not under test
    const Inputs& in = sets[static_cast<std::size_t>(i) % sets.size()];
    if (timeline) {
      const std::size_t from = timeline->mark();
      const auto t0 = Clock::now();
      call(in);
      host_ms.push_back(ms_since(t0));
      marks.emplace_back(from, timeline->mark());
    } else {
      torchrt::synchronize(device);
      const auto t0 = Clock::now();
      call(in);
      host_ms.push_back(ms_since(t0));
      torchrt::synchronize(device);
      device_ms.push_back(ms_since(t0));
    }
  }
  torchrt::synchronize(device);
  row.ended_unix = unix_seconds();
  for (const auto& [from, to] : marks) device_ms.push_back(timeline->elapsed_ms(from, to));
  const Percentiles p = percentiles(device_ms);
  row.median_ms = p.median;
  row.p10_ms = p.p10;
  row.p90_ms = p.p90;
  row.cv = p.cv;
  row.samples = static_cast<int>(device_ms.size());
  row.host_ms = percentiles(host_ms).median;
}

// A device graph of options.graph_calls calls, each on the next input set, replayed: the time of a
// call without the host's launches between them.
void time_graph(const OperatorCall& call, const std::vector<Inputs>& sets, const torch::Device& device,
                const MeasureOptions& options, OperatorRow& row) {
  if (options.graph_calls <= 0) return;
  std::unique_ptr<torchrt::DeviceGraph> graph = torchrt::make_device_graph(device);
  if (!graph) {
    row.graph_note = "no device graphs on " + row.device + " (its vendor brings none)";
    return;
  }
  try {
    graph->capture([&] {
      for (int i = 0; i < options.graph_calls; ++i) call(sets[static_cast<std::size_t>(i) % sets.size()]);
    });
    graph->replay();  // the first replay uploads the graph
    torchrt::synchronize(device);
    auto timeline = torchrt::make_device_timeline(device);
    std::vector<double> per_call;
    const auto started = Clock::now();
    for (int i = 0; i < options.samples || ms_since(started) < options.min_seconds * 1e3; ++i) {
      if (i >= kMostReplays) break;
      if (timeline) {
        const std::size_t from = timeline->mark();
        graph->replay();
        const std::size_t to = timeline->mark();
        torchrt::synchronize(device);
        per_call.push_back(timeline->elapsed_ms(from, to) / options.graph_calls);
      } else {
        torchrt::synchronize(device);
        const auto t0 = Clock::now();
        graph->replay();
        torchrt::synchronize(device);
        per_call.push_back(ms_since(t0) / options.graph_calls);
      }
    }
    row.graph_ms = percentiles(per_call).median;
  } catch (const std::exception& e) {
    row.graph_note = "the calls could not be captured as a graph: " + first_line(e.what());
  }
}

// The kernels one call runs, as the profiler names them: which library's kernel ATen picked, and
// whether an implementation reached its vendor's kernel.
void record_kernels(const OperatorCall& call, const Inputs& in, const torch::Device& device, OperatorRow& row) {
  try {
    torchrt::synchronize(device);
    torchrt::KernelProfile profile;
    call(in);
    torchrt::synchronize(device);
    for (const auto& k : profile.stop()) row.kernels.push_back(k.name);
    if (row.kernels.empty()) row.kernels_note = "the profiler recorded no device kernel on " + row.device;
  } catch (const std::exception& e) {
    row.kernels_note = first_line(e.what());
  }
}

void check_accuracy(const OperatorSpec& spec, const Inputs& cpu_rounded, const Inputs& on_device, const Sizes& sizes,
                    torch::Dtype dtype, const MeasureOptions& options, OperatorRow& row) {
  if (spec.verify) {  // a random operator: what it may give, not one result
    row.check_problem = spec.verify(spec.run(on_device, sizes).to(torch::kCPU), cpu_rounded);
    row.accurate = row.check_problem.empty();
    return;
  }
  const Inputs reference_inputs = converted(cpu_rounded, torch::kCPU, torch::kFloat64);
  const torch::Tensor out = spec.run(on_device, sizes);
  row.error = error_stats(out, spec.run(reference_inputs, sizes), row.rtol, row.atol, row.default_atol);
  double worst = row.error.worst_over_tolerance;
  if (spec.has_backward && c10::isFloatingType(dtype)) {
    torch::Generator gen = at::detail::createCPUGenerator(options.seed + 1);
    const torch::Tensor weights = at::normal(0.0, 1.0, out.sizes(), gen).to(dtype).to(torch::kFloat64);
    row.gradient_error =
        error_stats(gradients(spec, on_device, sizes, weights), gradients(spec, reference_inputs, sizes, weights),
                    row.rtol, row.atol, row.default_atol);
    row.has_gradients = true;
    worst = std::max(worst, row.gradient_error.worst_over_tolerance);
  }
  row.accurate = std::isfinite(worst) && worst <= 1.0;
}

}  // namespace

ErrorStats error_stats(const torch::Tensor& actual, const torch::Tensor& reference, double rtol, double atol,
                       double default_atol) {
  ErrorStats e;
  const torch::Tensor a = actual.to(torch::kCPU, torch::kFloat64).reshape(-1);
  const torch::Tensor r = reference.to(torch::kCPU, torch::kFloat64).reshape(-1);
  if (r.numel() == 0) return e;
  const torch::Tensor diff = (a - r).abs(), mag = r.abs();
  // Elements whose reference is near 0 are taken against a floor of a thousandth of the mean
  // magnitude: a relative error of a value that cancelled to 0 says nothing of the operator.
  const double floor = std::max(mag.mean().item<double>() * 1e-3, 1e-30);
  const torch::Tensor rel = diff / mag.clamp_min(floor);
  e.max_abs = diff.max().item<double>();
  e.mean_abs = diff.mean().item<double>();
  e.max_rel = rel.max().item<double>();
  e.mean_rel = rel.mean().item<double>();
  e.worst_over_tolerance = (diff / (atol + rtol * mag)).max().item<double>();
  e.worst_over_default = (diff / (default_atol + rtol * mag)).max().item<double>();
  return e;
}

void time_operator_call(const OperatorCall& call, const std::vector<Inputs>& sets, const torch::Device& device,
                        const MeasureOptions& options, OperatorRow& row) {
  time_calls(call, sets, device, options, row);
  if (options.record_kernels) record_kernels(call, sets.front(), device, row);
  time_graph(call, sets, device, options, row);
}

std::pair<double, double> default_tolerance(torch::Dtype dtype) {
  switch (dtype) {
    case torch::kBFloat16:
      return {1.6e-2, 1e-5};
    case torch::kFloat16:
      return {1e-3, 1e-5};
    case torch::kFloat64:
      return {1e-7, 1e-7};
    case torch::kInt:
    case torch::kShort:
      return {0, 0};  // exact
    default:
      return {1.3e-6, 1e-5};
  }
}

torch::Dtype parse_dtype(const std::string& name) {
  if (name == "fp32") return torch::kFloat32;
  if (name == "bf16") return torch::kBFloat16;
  if (name == "fp16") return torch::kFloat16;
  if (name == "fp64") return torch::kFloat64;
  if (name == "int32") return torch::kInt;
  if (name == "int16") return torch::kShort;
  throw std::invalid_argument("dtype '" + name + "' is not one of fp32, bf16, fp16, fp64, int32, int16");
}

std::string dtype_name(torch::Dtype dtype) {
  switch (dtype) {
    case torch::kBFloat16:
      return "bf16";
    case torch::kFloat16:
      return "fp16";
    case torch::kFloat64:
      return "fp64";
    case torch::kInt:
      return "int32";
    case torch::kShort:
      return "int16";
    default:
      return "fp32";
  }
}

std::runtime_error row_error(const std::string& what, const c10::Error& e, double needed_bytes, std::size_t copies,
                             const std::string& buffers, const std::string& lower, const std::string& hint) {
  const std::string message = e.what_without_backtrace();
  if (message.find("out of memory") != std::string::npos)
    return std::runtime_error(
        what + " needs about " + std::to_string(static_cast<long long>(needed_bytes / (1 << 20))) + " MiB " + buffers +
        " (" + std::to_string(copies) +
        " copies to rotate through) and the cache flush, more than the device has free: " + lower);
  return std::runtime_error(what + " did not run: " + first_line(message) + " " + hint);
}

OperatorRow measure_operator(const OperatorSpec& spec, const Sizes& sizes, torch::Dtype dtype,
                             const torch::Device& device, const MeasureOptions& options) {
  OperatorRow row;
  row.op = spec.name;
  row.implementation = spec.implementation;
  row.sizes = sizes;
  row.dtype = dtype_name(dtype);
  row.device = torchrt::device_text(device.str());
  std::tie(row.rtol, row.default_atol) = default_tolerance(dtype);
  row.atol = std::max(row.default_atol, 1e-4 * spec.reduction(sizes));
  const std::string what = spec.name + " " + sizes_text(sizes) + " in " + row.dtype + " on " + row.device;
  torch::Generator gen = at::detail::createCPUGenerator(options.seed);
  Inputs drawn = spec.inputs(sizes, gen);
  if (options.levels)
    for (auto& t : drawn)
      if (t.is_floating_point()) t = at::randint(-8, 9, t.sizes(), gen, torch::kFloat32) / 8;
  row.levels = options.levels;
  const Inputs cpu_rounded = rounded(drawn, dtype);
  const double set_bytes = bytes_of(cpu_rounded);
  const std::size_t copies =
      static_cast<std::size_t>(std::clamp(std::ceil(options.rotate_bytes / std::max(set_bytes, 1.0)), 1.0, 64.0));
  std::vector<Inputs> sets;
  try {
    for (std::size_t i = 0; i < copies; ++i) sets.push_back(converted(cpu_rounded, device));
    torchrt::synchronize(device);
    const auto t0 = Clock::now();
    spec.run(sets[0], sizes);
    torchrt::synchronize(device);
    row.cold_ms = ms_since(t0);
    const OperatorCall call = [&](const Inputs& in) { spec.run(in, sizes); };
    time_calls(call, sets, device, options, row);
    record_kernels(call, sets[0], device, row);
    time_graph(call, sets, device, options, row);
    row.deterministic = torch::equal(spec.run(sets[0], sizes), spec.run(sets[0], sizes));
    if (options.check_accuracy) check_accuracy(spec, cpu_rounded, sets[0], sizes, dtype, options, row);
    row.checked = options.check_accuracy;
  } catch (const c10::Error& e) {
    throw row_error(what, e, set_bytes * static_cast<double>(copies) + options.flush_bytes, copies, "for its inputs",
                    "lower the shape or rotate_bytes", "(a dtype the device or its kernels lack? try another --dtype)");
  }
  row.flops = spec.flops(sizes);
  row.bytes = spec.bytes(sizes, static_cast<double>(c10::elementSize(dtype)));
  if (row.median_ms > 0) {
    row.tflops = row.flops / (row.median_ms * 1e-3) / 1e12;
    row.gb_per_s = row.bytes / (row.median_ms * 1e-3) / 1e9;
  }
  row.intensity = row.bytes > 0 ? row.flops / row.bytes : 0;
  return row;
}

nlohmann::json OperatorRow::to_json() const {
  auto error_json = [](const ErrorStats& e) {
    return nlohmann::json{{"max_abs", e.max_abs},
                          {"mean_abs", e.mean_abs},
                          {"max_rel", e.max_rel},
                          {"mean_rel", e.mean_rel},
                          {"worst_over_tolerance", e.worst_over_tolerance},
                          {"worst_over_default", e.worst_over_default}};
  };
  nlohmann::json j = {{"op", op},
                      {"shape", sizes},
                      {"dtype", dtype},
                      {"device", device},
                      {"implementation", implementation},
                      {"median_ms", median_ms},
                      {"p10_ms", p10_ms},
                      {"p90_ms", p90_ms},
                      {"cv", cv},
                      {"samples", samples},
                      {"device_timed", device_timed},
                      {"host_ms", host_ms},
                      {"cold_ms", cold_ms},
                      {"flops", flops},
                      {"bytes", bytes},
                      {"tflops", tflops},
                      {"gb_per_s", gb_per_s},
                      {"intensity", intensity},
                      {"error", error_json(error)},
                      {"rtol", rtol},
                      {"atol", atol},
                      {"default_atol", default_atol},
                      {"checked", checked},
                      {"accurate", accurate},
                      {"deterministic", deterministic},
                      {"input_values", levels ? "levels" : "normal"},
                      {"started_unix", started_unix},
                      {"ended_unix", ended_unix}};
  if (!call.empty()) {
    j["call"] = call;
    j["calls_per_step"] = calls_per_step;
    j["backward"] = backward;
    j["flops_known"] = flops_known;
    if (warm_ms) j["warm_ms"] = *warm_ms;
  }
  if (ranks > 0) {
    j["ranks"] = ranks;
    j["bus_factor"] = bus_factor;
    j["bus_gb_per_s"] = bus_gb_per_s;
    j["algorithm"] = algorithm;
  }
  if (has_gradients) j["gradient_error"] = error_json(gradient_error);
  if (!check_problem.empty()) j["check_problem"] = check_problem;
  j["kernels"] = kernels;
  if (!kernels_note.empty()) j["kernels_note"] = kernels_note;
  if (graph_ms) j["graph_ms"] = *graph_ms;
  if (!graph_note.empty()) j["graph_note"] = graph_note;
  if (datasheet_fraction) j["datasheet_fraction"] = *datasheet_fraction;
  if (measured_fraction) j["measured_fraction"] = *measured_fraction;
  if (speedup) j["speedup_vs_aten"] = *speedup;
  if (!speedup_void.empty()) j["speedup_void"] = speedup_void;
  return j;
}

}  // namespace xpuperf::opbench
