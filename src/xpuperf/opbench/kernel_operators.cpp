#include "xpuperf/opbench/kernel_operators.h"

#include <algorithm>

#include "xpuperf/opbench/spec_helpers.h"
#include "xpuperf/ops/composite.h"
#include "xpuperf/ops/operators.h"

namespace xpuperf::opbench {
namespace {

using Sizes = std::vector<std::int64_t>;
using Inputs = OperatorInputs;

constexpr double kEps = 1e-6;

OperatorSpec rms_norm() {
  OperatorSpec s;
  s.name = "rms_norm";
  s.size_names = {"rows", "cols"};
  s.flops_formula = "4·rows·cols";
  s.bytes_formula = "(2·rows·cols + cols)·e";
  s.has_backward = true;
  s.inputs = [](const Sizes& z, torch::Generator& g) {
    return Inputs{standard_normal({z[0], z[1]}, g), standard_normal({z[1]}, g)};
  };
  s.run = [](const Inputs& in, const Sizes&) {
    return std::get<1>(ops::composite::add_rms_norm(in[0], torch::Tensor(), in[1], kEps));
  };
  s.alternatives.push_back({"xpuperf", "add_rms_norm", [](const Inputs& in, const Sizes&) {
                              return std::get<1>(ops::add_rms_norm(in[0], torch::Tensor(), in[1], kEps));
                            }});
  s.flops = [](const Sizes& z) { return 4.0 * product(z); };
  s.bytes = [](const Sizes& z, double e) { return (2.0 * product(z) + static_cast<double>(z[1])) * e; };
  s.reduction = [](const Sizes& z) { return static_cast<double>(std::max(z[0], z[1])); };
  return s;
}

// SiLU(gate) × up of a (rows, 2·cols) input: a SwiGLU MLP's activation (FlagGems' silu_and_mul).
OperatorSpec silu_and_mul() {
  OperatorSpec s;
  s.name = "silu_and_mul";
  s.size_names = {"rows", "cols"};
  s.flops_formula = "5·rows·cols";
  s.bytes_formula = "3·rows·cols·e";
  s.has_backward = true;
  s.inputs = [](const Sizes& z, torch::Generator& g) { return Inputs{standard_normal({z[0], 2 * z[1]}, g)}; };
  s.run = [](const Inputs& in, const Sizes&) { return ops::composite::silu_mul(in[0]); };
  s.alternatives.push_back(
      {"xpuperf", "silu_mul", [](const Inputs& in, const Sizes&) { return ops::silu_mul(in[0]); }});
  s.flops = [](const Sizes& z) { return 5.0 * product(z); };
  s.bytes = [](const Sizes& z, double e) { return 3.0 * product(z) * e; };
  return s;
}

OperatorSpec argmax() {
  OperatorSpec s;
  s.name = "argmax";
  s.size_names = {"rows", "cols"};
  s.flops_formula = "rows·cols";
  s.bytes_formula = "rows·cols·e + 8·rows";
  s.has_backward = false;
  s.inputs = [](const Sizes& z, torch::Generator& g) { return Inputs{standard_normal({z[0], z[1]}, g)}; };
  s.run = [](const Inputs& in, const Sizes&) { return in[0].argmax(-1); };
  s.alternatives.push_back({"xpuperf", "argmax", [](const Inputs& in, const Sizes&) { return ops::argmax(in[0]); }});
  s.flops = product;
  s.bytes = [](const Sizes& z, double e) { return product(z) * e + 8.0 * static_cast<double>(z[0]); };
  return s;
}

bool needs_gradient(const Inputs& inputs) {
  return std::any_of(inputs.begin(), inputs.end(), [](const torch::Tensor& t) { return t.requires_grad(); });
}

}  // namespace

std::vector<OperatorSpec> kernel_operators() {
  return {rms_norm(), silu_and_mul(), argmax()};
}

void add_kernel_alternatives(std::vector<OperatorSpec>& specs) {
  for (auto& s : specs) {
    if (s.name == "layer_norm")
      s.alternatives.push_back({"xpuperf", "add_layer_norm", [](const Inputs& in, const Sizes&) {
                                  return std::get<1>(ops::add_layer_norm(in[0], torch::Tensor(), in[1], in[2], 1e-5));
                                }});
    if (s.name == "cross_entropy")
      s.alternatives.push_back({"xpuperf", "cross_entropy",
                                [](const Inputs& in, const Sizes&) { return ops::cross_entropy(in[0], in[1]); }});
  }
}

bool implementation_available(const Implementation& alternative, const torch::Device& device) {
  return ops::has_kernel(alternative.kernel, device.type());
}

OperatorSpec with_implementation(const OperatorSpec& spec, const Implementation& alternative,
                                 const torch::Device& device) {
  OperatorSpec s = spec;
  s.implementation = alternative.name;
  s.alternatives.clear();
  s.has_backward = spec.has_backward && ops::has_kernel(alternative.kernel, device.type(), /*training=*/true);
  const OperatorRun run = alternative.run;
  // The float64 reference runs the same call on the CPU, where the dispatcher takes the composite.
  s.run = [run](const Inputs& in, const Sizes& z) {
    if (needs_gradient(in)) return run(in, z);
    c10::InferenceMode forward_only;
    return run(in, z);
  };
  return s;
}

}  // namespace xpuperf::opbench
