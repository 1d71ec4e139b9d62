#include "xpuperf/base/conformance.h"

#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/torch.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "xpuperf/models/fused_ops.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/distributed.h"
#include "xpuperf/torchrt/vendor_runtime.h"

namespace xpuperf::base {
namespace {

using nlohmann::json;

struct Rows {
  std::ostream& out;
  int rank;
  void add(const std::string& group, const std::string& name, const std::string& dtype, double error, double tolerance,
           const std::string& note = "") {
    const bool pass = std::isfinite(error) && error <= tolerance;
    out << "XPUPERF_CHECK "
        << json{{"group", group},         {"name", name},
                {"dtype", dtype},         {"error", std::isfinite(error) ? error : -1.0},
                {"tolerance", tolerance}, {"pass", pass},
                {"note", note},           {"rank", rank}}
               .dump()
        << "\n";
  }
  // A check that threw: failed (no error measured), its message the note.
  void failed(const std::string& group, const std::string& name, const std::string& dtype, const std::string& why) {
    add(group, name, dtype, INFINITY, 0, why);
  }
  void guarded(const std::string& group, const std::string& name, const std::string& dtype,
               const std::function<void()>& check) {
    try {
      check();
    } catch (const c10::Error& e) {
      failed(group, name, dtype, e.what_without_backtrace());
    } catch (const std::exception& e) {
      failed(group, name, dtype, e.what());
    }
  }
};

// The largest difference, relative to the reference's largest magnitude (at least 1).
double relative_error(const torch::Tensor& got, const torch::Tensor& want) {
  const auto g = got.detach().to(torch::kCPU, torch::kFloat64), w = want.detach().to(torch::kCPU, torch::kFloat64);
  if (g.sizes() != w.sizes()) return INFINITY;
  const double scale = std::max(1.0, w.abs().max().item<double>());
  return (g - w).abs().max().item<double>() / scale;
}

void check_device(Rows& rows, const torch::Device& device) {
  rows.guarded("device", "memory: fill and read back", "float32", [&] {
    const auto t = torch::full({1 << 20}, 3.25f, torch::TensorOptions().device(device));
    rows.add("device", "memory: fill and read back", "float32", relative_error(t, torch::full({1 << 20}, 3.25f)), 0);
  });
  rows.guarded("device", "copy host to device and back", "float32", [&] {
    const auto host = torch::randn({257, 129});
    rows.add("device", "copy host to device and back", "float32", relative_error(host.to(device).cpu(), host), 0);
  });
  rows.guarded("device", "copy within the device (strided)", "float32", [&] {
    const auto host = torch::randn({64, 48});
    const auto on = host.to(device);
    rows.add("device", "copy within the device (strided)", "float32",
             relative_error(on.t().contiguous().t().clone(), host), 0);
  });
  rows.guarded("device", "copy between dtypes on the device", "bfloat16", [&] {
    const auto host = torch::randn({1000});
    rows.add("device", "copy between dtypes on the device", "bfloat16",
             relative_error(host.to(device).to(torch::kBFloat16).cpu(), host.to(torch::kBFloat16)), 0);
  });
  if (device.is_cpu()) return;
  rows.guarded("device", "stream event recorded and waited for", "-", [&] {
    const c10::impl::VirtualGuardImpl guard(device.type());
    const c10::Stream stream = guard.getStream(device);
    c10::Event event(device.type());
    const auto t = torch::ones({1 << 16}, torch::TensorOptions().device(device)) * 2;
    event.record(stream);
    torchrt::synchronize(device);
    rows.add("device", "stream event recorded and waited for", "-", event.query() ? 0 : 1, 0,
             "event " + std::string(event.query() ? "complete" : "still pending") + " after synchronize");
    (void)t;
  });
}

// One operator: `op(inputs, use_kernels)` on the device with the device's kernels, against the
// composite form on the CPU in float32 from the same (rounded) inputs; then the gradients of the
// inputs that take one, for a random weighting of the output.
void check_operator(Rows& rows, const torch::Device& device, const std::string& name, torch::ScalarType dtype,
                    const std::vector<torch::Tensor>& inputs, const std::vector<bool>& differentiable,
                    const std::function<torch::Tensor(const std::vector<torch::Tensor>&, bool)>& op) {
  const std::string type = dtype == torch::kFloat ? "float32" : dtype == torch::kHalf ? "float16" : "bfloat16";
  const double tolerance = dtype == torch::kFloat ? 1e-5 : dtype == torch::kHalf ? 4e-3 : 3e-2;
  rows.guarded("operators", name, type, [&] {
    std::vector<torch::Tensor> on_device, reference;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const bool floating = inputs[i].is_floating_point();
      const auto rounded = floating ? inputs[i].to(dtype) : inputs[i];
      on_device.push_back(rounded.to(device).detach().requires_grad_(differentiable[i]));
      reference.push_back((floating ? rounded.to(torch::kFloat) : rounded).detach().requires_grad_(differentiable[i]));
    }
    const auto got = op(on_device, true);
    const auto want = op(reference, false);
    rows.add("operators", name, type, relative_error(got, want), tolerance);
    if (std::none_of(differentiable.begin(), differentiable.end(), [](bool d) { return d; })) return;
    const auto weights = torch::randn(want.sizes());
    (got.to(torch::kFloat) * weights.to(device)).sum().backward();
    (want * weights).sum().backward();
    double worst = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (differentiable[i]) worst = std::max(worst, relative_error(on_device[i].grad(), reference[i].grad()));
    rows.add("operators", name + " (gradients)", type, worst, tolerance);
  });
}

void check_operators(Rows& rows, const torch::Device& device) {
  torch::manual_seed(7);
  const std::int64_t tokens = 24, width = 64;
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    const auto x = torch::randn({tokens, width}), delta = torch::randn({tokens, width});
    const auto weight = torch::rand({width}) + 0.5, bias = torch::randn({width});
    check_operator(rows, device, "add_rms_norm", dtype, {x, delta, weight}, {true, true, true},
                   [](const std::vector<torch::Tensor>& in, bool kernels) {
                     return models::fused::add_rms_norm(in[0], in[1], in[2], 1e-5, kernels).second;
                   });
    check_operator(rows, device, "add_layer_norm", dtype, {x, delta, weight, bias}, {true, true, true, true},
                   [](const std::vector<torch::Tensor>& in, bool kernels) {
                     return models::fused::add_layer_norm(in[0], in[1], in[2], in[3], 1e-5, kernels).second;
                   });
    check_operator(rows, device, "bias_gelu", dtype, {x, bias}, {true, true},
                   [](const std::vector<torch::Tensor>& in, bool kernels) {
                     return models::fused::bias_gelu(in[0], in[1], kernels);
                   });
    check_operator(rows, device, "silu_mul", dtype, {x, delta}, {true, true},
                   [](const std::vector<torch::Tensor>& in, bool kernels) {
                     return models::fused::silu_mul(in[0], in[1], kernels);
                   });
    const auto targets = torch::randint(0, width, {tokens}, torch::kLong);
    check_operator(rows, device, "cross_entropy", dtype, {x, targets}, {true, false},
                   [](const std::vector<torch::Tensor>& in, bool kernels) {
                     return models::fused::cross_entropy(in[0], in[1], kernels);
                   });
  }
}

void check_collectives(Rows& rows, const torch::Device& device, const RankEnv& env) {
  const int n = env.world_size, r = env.rank;
  if (n < 2) {
    rows.add("collectives", "one rank: nothing to exchange", "-", 0, 0, "xpuperf vendor check --nproc 2 checks them");
    return;
  }
  std::unique_ptr<torchrt::Distributed> dist;
  rows.guarded("collectives", "form the group", "-", [&] {
    dist = torchrt::Distributed::create(env, device, {});
    rows.add("collectives", "form the group", "-", 0, 0, "backend " + dist->backend());
  });
  if (!dist) return;
  const auto on = torch::TensorOptions().device(device);
  rows.guarded("collectives", "all_reduce (sum)", "float32", [&] {
    auto t = torch::arange(1000, torch::kFloat).to(device) * (r + 1);
    dist->all_reduce_sum(t);
    rows.add("collectives", "all_reduce (sum)", "float32",
             relative_error(t, torch::arange(1000, torch::kFloat) * (n * (n + 1) / 2.0)), 0);
  });
  rows.guarded("collectives", "all_reduce (max)", "float32", [&] {
    auto t = torch::full({16}, static_cast<float>(r), on);
    dist->all_reduce_max(t);
    rows.add("collectives", "all_reduce (max)", "float32",
             relative_error(t, torch::full({16}, static_cast<float>(n - 1))), 0);
  });
  rows.guarded("collectives", "all_gather", "float32", [&] {
    auto in = torch::full({8}, static_cast<float>(r), on);
    auto out = torch::empty({8 * n}, on);
    dist->all_gather(out, in);
    rows.add("collectives", "all_gather", "float32",
             relative_error(out, torch::arange(n, torch::kFloat).repeat_interleave(8)), 0);
  });
  rows.guarded("collectives", "reduce_scatter (sum)", "float32", [&] {
    auto in = torch::arange(8 * n, torch::kFloat).to(device) + r;
    auto out = torch::empty({8}, on);
    dist->reduce_scatter_sum(out, in);
    const auto want = torch::arange(8 * r, 8 * (r + 1), torch::kFloat) * n + n * (n - 1) / 2.0;
    rows.add("collectives", "reduce_scatter (sum)", "float32", relative_error(out, want), 0);
  });
  rows.guarded("collectives", "all_to_all", "float32", [&] {
    auto in = (torch::arange(n, torch::kFloat) + 10.0 * r).repeat_interleave(4).to(device);
    auto out = torch::empty({4 * n}, on);
    dist->all_to_all(out, in);
    const auto want = (torch::arange(n, torch::kFloat) * 10 + r).repeat_interleave(4);
    rows.add("collectives", "all_to_all", "float32", relative_error(out, want), 0);
  });
  rows.guarded("collectives", "broadcast (rank 0's values)", "float32", [&] {
    std::vector<torch::Tensor> params{torch::full({5}, static_cast<float>(r + 3), on)};
    dist->broadcast_parameters(params);
    rows.add("collectives", "broadcast (rank 0's values)", "float32", relative_error(params[0], torch::full({5}, 3.0f)),
             0);
  });
  rows.guarded("collectives", "barrier", "-", [&] {
    dist->barrier();
    rows.add("collectives", "barrier", "-", 0, 0);
  });
}

}  // namespace

int run_conformance_rank(const VendorSpec& vendor, const RankEnv& env, std::ostream& out, std::ostream& err) {
  torch::Device device = torch::kCPU;
  try {
    const auto& active = torchrt::activate_vendor(vendor);
    device = vendor.declared && vendor.device_type == "cpu" ? torch::Device(torch::kCPU)
                                                            : torchrt::choose_device("auto", env.local_rank);
    if (env.rank == 0)
      out << "XPUPERF_CHECK_DEVICE "
          << json{{"device", torchrt::device_text(device.str())},
                  {"plugin", active.plugin_name.empty() ? "none" : active.plugin_name + " " + active.plugin_version}}
                 .dump()
          << "\n";
  } catch (const std::exception& e) {
    err << "xpuperf: error: rank " << env.rank << ": " << e.what() << "\n";
    return 1;
  }
  Rows rows{out, env.rank};
  rows.guarded("device", "the device's checks", "-", [&] { check_device(rows, device); });
  if (env.rank == 0) rows.guarded("operators", "the operators' checks", "-", [&] { check_operators(rows, device); });
  rows.guarded("collectives", "the collectives' checks", "-", [&] { check_collectives(rows, device, env); });
  out.flush();
  return 0;
}

}  // namespace xpuperf::base
