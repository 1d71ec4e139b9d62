#include "xpuperf/base/conformance.h"

#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "xpuperf/ops/composite.h"
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

// One operator (a name of ops::operator_names()): `op(inputs, on_device)` through the dispatcher
// with the device's kernels (on_device true) against the composite implementation on the CPU in
// float32 from the same (rounded) inputs; then the gradients of the inputs that take one, for a random
// weighting of the output. The note says which implementation the device ran.
using OperatorCall = std::function<torch::Tensor(const std::vector<torch::Tensor>&, bool)>;
void check_operator(Rows& rows, const torch::Device& device, const std::string& name, torch::ScalarType dtype,
                    const std::vector<torch::Tensor>& inputs, const std::vector<bool>& differentiable,
                    const OperatorCall& op, double tolerance_scale = 1) {
  const std::string type = dtype == torch::kFloat ? "float32" : dtype == torch::kHalf ? "float16" : "bfloat16";
  const double tolerance = tolerance_scale * (dtype == torch::kFloat ? 1e-5 : dtype == torch::kHalf ? 4e-3 : 3e-2);
  const bool trains = std::any_of(differentiable.begin(), differentiable.end(), [](bool d) { return d; });
  const auto kernel = [&](bool training) {
    return ops::has_kernel(name, device.type(), training) ? std::string("the device's kernel")
                                                          : std::string("the composite operator");
  };
  rows.guarded("operators", name, type, [&] {
    std::vector<torch::Tensor> on_device, reference;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const bool floating = inputs[i].is_floating_point();
      const auto rounded = floating ? inputs[i].to(dtype) : inputs[i];
      on_device.push_back(rounded.to(device).detach().requires_grad_(differentiable[i]));
      reference.push_back((floating ? rounded.to(torch::kFloat) : rounded).detach().requires_grad_(differentiable[i]));
    }
    torch::Tensor got;
    {
      // The forward alone first: a kernel registered for forwards only runs where autograd does not record.
      const torch::NoGradGuard forward_only;
      got = op(on_device, true);
    }
    const auto want = op(reference, false);
    rows.add("operators", name, type, relative_error(got, want), tolerance, kernel(false));
    if (!trains) return;
    const auto recorded = op(on_device, true);
    const auto weights = torch::randn(want.sizes());
    (recorded.to(torch::kFloat) * weights.to(device)).sum().backward();
    (want * weights).sum().backward();
    double worst = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (differentiable[i]) worst = std::max(worst, relative_error(on_device[i].grad(), reference[i].grad()));
    rows.add("operators", name + " (gradients)", type, worst, tolerance, kernel(true));
  });
}

// Whether two tensors are equal, as an error of 0 or 1 (an argmax's indices).
double mismatch(const torch::Tensor& got, const torch::Tensor& want) {
  return got.sizes() == want.sizes() && got.cpu().equal(want.cpu()) ? 0 : 1;
}

// The element-wise and normalising operators, on (tokens, width) rows, and the loss.
void check_row_operators(Rows& rows, const torch::Device& device, torch::Dtype dtype, std::int64_t tokens,
                         std::int64_t width) {
  const auto x = torch::randn({tokens, width}), delta = torch::randn({tokens, width});
  const auto weight = torch::rand({width}) + 0.5, bias = torch::randn({width});
  check_operator(rows, device, "add_rms_norm", dtype, {x, delta, weight}, {true, true, true},
                 [](const std::vector<torch::Tensor>& in, bool on_device) {
                   return std::get<1>(on_device ? ops::add_rms_norm(in[0], in[1], in[2], 1e-5)
                                                : ops::composite::add_rms_norm(in[0], in[1], in[2], 1e-5));
                 });
  check_operator(rows, device, "add_layer_norm", dtype, {x, delta, weight, bias}, {true, true, true, true},
                 [](const std::vector<torch::Tensor>& in, bool on_device) {
                   return std::get<1>(on_device ? ops::add_layer_norm(in[0], in[1], in[2], in[3], 1e-5)
                                                : ops::composite::add_layer_norm(in[0], in[1], in[2], in[3], 1e-5));
                 });
  check_operator(rows, device, "bias_gelu", dtype, {x, bias}, {true, true},
                 [](const std::vector<torch::Tensor>& in, bool on_device) {
                   return on_device ? ops::bias_gelu(in[0], in[1]) : ops::composite::bias_gelu(in[0], in[1]);
                 });
  check_operator(rows, device, "silu_mul.pair", dtype, {x, delta}, {true, true},
                 [](const std::vector<torch::Tensor>& in, bool on_device) {
                   return on_device ? ops::silu_mul(in[0], in[1]) : ops::composite::silu_mul(in[0], in[1]);
                 });
  check_operator(rows, device, "silu_mul", dtype, {torch::randn({tokens, 2 * width})}, {false},
                 [](const std::vector<torch::Tensor>& in, bool on_device) {
                   return on_device ? ops::silu_mul(in[0]) : ops::composite::silu_mul(in[0]);
                 });
  const auto targets = torch::randint(0, width, {tokens}, torch::kLong);
  check_operator(rows, device, "cross_entropy", dtype, {x, targets}, {true, false},
                 [](const std::vector<torch::Tensor>& in, bool on_device) {
                   return on_device ? ops::cross_entropy(in[0], in[1]) : ops::composite::cross_entropy(in[0], in[1]);
                 });
}

// The decoding step's operators: its products, the rotary positions and the attention.
void check_decoding_operators(Rows& rows, const torch::Device& device, torch::Dtype dtype, std::int64_t width) {
  // A decoding step's products: 2 rows against 96 output units.
  const auto rows_x = torch::randn({2, width}), product_weight = torch::randn({96, width}) / 8;
  check_operator(rows, device, "linear", dtype, {rows_x, product_weight}, {false, false},
                 [](const std::vector<torch::Tensor>& in, bool on_device) {
                   return on_device ? ops::linear(in[0], in[1]) : ops::composite::linear(in[0], in[1]);
                 });
  check_operator(rows, device, "linear_silu_mul", dtype, {rows_x, product_weight}, {false, false},
                 [](const std::vector<torch::Tensor>& in, bool on_device) {
                   return on_device ? ops::linear_silu_mul(in[0], in[1])
                                    : ops::composite::linear_silu_mul(in[0], in[1]);
                 });
  // Rotary positions on a joined q/k/v (training's form): 2 query heads and 1 key/value head of 16.
  const std::int64_t heads = 2, kv_heads = 1, head_dim = 16, positions = 8;
  const auto angles = torch::arange(positions * head_dim).view({1, positions, 1, head_dim}).to(torch::kFloat) / 37;
  check_operator(rows, device, "rotary_qkv", dtype,
                 {torch::randn({2, positions, heads + 2 * kv_heads, head_dim}), angles.cos(), angles.sin()},
                 {true, false, false}, [=](const std::vector<torch::Tensor>& in, bool on_device) {
                   const auto r = on_device ? ops::rotary_qkv(in[0], heads, kv_heads, in[1], in[2])
                                            : ops::composite::rotary_qkv(in[0], heads, kv_heads, in[1], in[2]);
                   return torch::cat({r.q, r.k, r.v}, 2);
                 });
  // A decoding step's attention: 2 rows at positions 5 and 9 of a cache of 16, 12 positions read.
  const auto step_positions = torch::tensor({5L, 9L}).view({2, 1});
  check_operator(rows, device, "decode_attention", dtype,
                 {torch::randn({2, 4, 1, width}), torch::randn({2, 16, 2, width}), torch::randn({2, 16, 2, width}),
                  step_positions},
                 {false, false, false, false}, [](const std::vector<torch::Tensor>& in, bool on_device) {
                   return on_device ? ops::decode_attention(in[0], in[1], in[2], in[3], 12)
                                    : ops::composite::decode_attention(in[0], in[1], in[2], in[3], 12);
                 });
}

void check_convolution_operators(Rows& rows, const torch::Device& device, torch::Dtype dtype) {
  // ResNet's batch norm with the residual add and ReLU, and its stem's max pool, channels-last. In
  // bfloat16 without the ReLU: an output near 0 rounds to the other side of it now and then, and the
  // ReLU's gradient there is the whole gradient or none, which says nothing of the kernel.
  const auto channels_last = torch::MemoryFormat::ChannelsLast;
  const auto act = dtype == torch::kFloat ? ops::Activation::Relu : ops::Activation::None;
  check_operator(
      rows, device, "batch_norm_act", dtype,
      {torch::randn({4, 16, 5, 5}), torch::rand({16}) + 0.5, torch::randn({16}), torch::randn({4, 16, 5, 5})},
      {true, true, true, true}, [=](const std::vector<torch::Tensor>& in, bool on_device) {
        const auto x = in[0].contiguous(channels_last), residual = in[3].contiguous(channels_last);
        const auto w = in[1].to(torch::kFloat), b = in[2].to(torch::kFloat);
        const auto stats = torch::TensorOptions().device(in[0].device());
        const auto mean = torch::zeros({16}, stats), var = torch::ones({16}, stats);
        return on_device ? ops::batch_norm_act(x, w, b, mean, var, residual, act, true, 0.1, 1e-5)
                         : ops::composite::batch_norm_act(x, w, b, mean, var, residual, act, true, 0.1, 1e-5);
      });
  check_operator(rows, device, "max_pool2d", dtype, {torch::randn({2, 16, 9, 9})}, {true},
                 [=](const std::vector<torch::Tensor>& in, bool on_device) {
                   const auto x = in[0].contiguous(channels_last);
                   return on_device ? ops::max_pool2d(x, 3, 2, 1) : ops::composite::max_pool2d(x, 3, 2, 1);
                 });
}

// bf16_weights' optimizer step (bfloat16 only) and the masked-LM head's argmax.
void check_step_operators(Rows& rows, const torch::Device& device, torch::Dtype dtype, std::int64_t width) {
  // bf16_weights' Adam step (float masters, bfloat16 gradients and weights), two steps: the masters
  // and the weights they round into.
  if (dtype == torch::kBFloat16)
    rows.guarded("operators", "master_adam_step", "bfloat16", [&] {
      const auto master = torch::randn({1000}), grad = torch::randn({1000}).to(dtype);
      ops::MasterAdamStep step;
      step.lr = 1e-2, step.weight_decay = 0.1;
      std::vector<torch::Tensor> got{master.to(device), torch::zeros({1000}, torch::TensorOptions().device(device)),
                                     torch::zeros({1000}, torch::TensorOptions().device(device)),
                                     master.to(dtype).to(device)};
      std::vector<torch::Tensor> want{master.clone(), torch::zeros({1000}), torch::zeros({1000}), master.to(dtype)};
      for (int n = 1; n <= 2; ++n) {
        step.bias_correction1 = 1 - std::pow(step.beta1, n);
        step.bias_correction2_sqrt = std::sqrt(1 - std::pow(step.beta2, n));
        ops::master_adam_step(got[0], got[1], got[2], grad.to(device), got[3], step);
        ops::composite::master_adam_step(want[0], want[1], want[2], grad, want[3], step, {});
      }
      const double error = std::max(relative_error(got[0], want[0]), relative_error(got[3], want[3]));
      // The masters to float's rounding; a weight may round to the next bfloat16 where its master
      // differs in the last bit.
      rows.add("operators", "master_adam_step", "bfloat16", error, 1e-2,
               ops::has_kernel("master_adam_step", device.type()) ? "the device's kernel" : "the composite operator");
    });
  // The masked-LM head's argmax over many rows (ties go to the first on both sides).
  rows.guarded("operators", "argmax", dtype == torch::kFloat ? "float32" : "bfloat16", [&] {
    const auto logits = torch::randn({80, width}).to(dtype);
    rows.add("operators", "argmax", dtype == torch::kFloat ? "float32" : "bfloat16",
             mismatch(ops::argmax(logits.to(device)), ops::composite::argmax(logits.to(torch::kFloat))), 0,
             ops::has_kernel("argmax", device.type()) ? "the device's kernel" : "the composite operator");
  });
}

// Every xpuperf operator on the device against its composite form on the CPU, in float32 and
// bfloat16; the inputs are drawn in one order from one seed.
void check_operators(Rows& rows, const torch::Device& device) {
  torch::manual_seed(7);
  const std::int64_t tokens = 24, width = 64;
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    check_row_operators(rows, device, dtype, tokens, width);
    check_decoding_operators(rows, device, dtype, width);
    check_convolution_operators(rows, device, dtype);
    check_step_operators(rows, device, dtype, width);
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
