#include "xpuperf/opbench/operators.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "xpuperf/opbench/kernel_operators.h"
#include "xpuperf/opbench/more_operators.h"
#include "xpuperf/opbench/spec_helpers.h"

namespace xpuperf::opbench {
namespace {

using Sizes = std::vector<std::int64_t>;
using Inputs = std::vector<torch::Tensor>;

// An operator of one input of any shape, taken as its element count n.
OperatorSpec pointwise(const std::string& name, double flops_per_element,
                       std::function<torch::Tensor(const torch::Tensor&)> f, bool backward = true) {
  OperatorSpec s;
  s.name = name;
  s.size_names = {"n"};
  s.flops_formula = flops_per_element == 1 ? "n" : std::to_string(static_cast<int>(flops_per_element)) + "·n";
  s.bytes_formula = "2·n·e";
  s.has_backward = backward;
  s.inputs = [](const Sizes& z, torch::Generator& g) { return Inputs{standard_normal({z[0]}, g)}; };
  s.run = [f](const Inputs& in, const Sizes&) { return f(in[0]); };
  s.flops = [flops_per_element](const Sizes& z) { return flops_per_element * static_cast<double>(z[0]); };
  s.bytes = [](const Sizes& z, double e) { return 2.0 * static_cast<double>(z[0]) * e; };
  return s;
}

// Two inputs of n elements, one output.
OperatorSpec binary(const std::string& name,
                    std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)> f) {
  OperatorSpec s;
  s.name = name;
  s.size_names = {"n"};
  s.flops_formula = "n";
  s.bytes_formula = "3·n·e";
  s.has_backward = true;
  s.inputs = [name](const Sizes& z, torch::Generator& g) {
    torch::Tensor b = standard_normal({z[0]}, g);
    if (name == "div") b = b.abs() + 0.5;  // away from 0: a quotient's error is the operator's, not the input's
    return Inputs{standard_normal({z[0]}, g), b};
  };
  s.run = [f](const Inputs& in, const Sizes&) { return f(in[0], in[1]); };
  s.flops = [](const Sizes& z) { return static_cast<double>(z[0]); };
  s.bytes = [](const Sizes& z, double e) { return 3.0 * static_cast<double>(z[0]) * e; };
  return s;
}

// An operator defined on positive inputs (log, sqrt, ...): its inputs drawn as |x| + 0.5, away
// from 0, where the operator's error is its own and not the input's.
OperatorSpec positive(OperatorSpec spec) {
  const auto draw = spec.inputs;
  spec.inputs = [draw](const Sizes& z, torch::Generator& g) {
    Inputs in = draw(z, g);
    for (auto& t : in) t = t.abs() + 0.5;
    return in;
  };
  return spec;
}

// Over the last dimension of a rows × cols input.
OperatorSpec rowwise(const std::string& name, double flops_per_element, bool keeps_shape,
                     std::function<torch::Tensor(const torch::Tensor&)> f, bool backward = true) {
  OperatorSpec s;
  s.name = name;
  s.size_names = {"rows", "cols"};
  s.flops_formula = (flops_per_element == 1 ? "" : std::to_string(static_cast<int>(flops_per_element)) + "·") +
                    std::string("rows·cols");
  s.bytes_formula = keeps_shape ? "2·rows·cols·e" : "(rows·cols + rows)·e";
  s.has_backward = backward;
  s.inputs = [](const Sizes& z, torch::Generator& g) { return Inputs{standard_normal({z[0], z[1]}, g)}; };
  s.run = [f](const Inputs& in, const Sizes&) { return f(in[0]); };
  s.flops = [flops_per_element](const Sizes& z) { return flops_per_element * product(z); };
  s.bytes = [keeps_shape](const Sizes& z, double e) {
    return (keeps_shape ? 2.0 * product(z) : product(z) + static_cast<double>(z[0])) * e;
  };
  s.reduction = [](const Sizes& z) { return static_cast<double>(z[1]); };
  return s;
}

std::vector<OperatorSpec> gemms() {
  std::vector<OperatorSpec> out;
  OperatorSpec mm;
  mm.name = "mm";
  mm.size_names = {"M", "N", "K"};
  mm.flops_formula = "2·M·N·K";
  mm.bytes_formula = "(M·K + K·N + M·N)·e";
  mm.has_backward = true;
  mm.inputs = [](const Sizes& z, torch::Generator& g) {
    return Inputs{standard_normal({z[0], z[2]}, g), standard_normal({z[2], z[1]}, g)};
  };
  mm.run = [](const Inputs& in, const Sizes&) { return torch::mm(in[0], in[1]); };
  mm.flops = [](const Sizes& z) { return 2.0 * product(z); };
  mm.reduction = largest;  // K for the product, M and N for its gradients
  mm.bytes = [](const Sizes& z, double e) {
    const double m = static_cast<double>(z[0]), n = static_cast<double>(z[1]), k = static_cast<double>(z[2]);
    return (m * k + k * n + m * n) * e;
  };
  out.push_back(mm);

  OperatorSpec addmm = mm;
  addmm.name = "addmm";
  addmm.flops_formula = "2·M·N·K + M·N";
  addmm.bytes_formula = "(M·K + K·N + 2·M·N)·e";
  addmm.inputs = [](const Sizes& z, torch::Generator& g) {
    return Inputs{standard_normal({z[0], z[1]}, g), standard_normal({z[0], z[2]}, g), standard_normal({z[2], z[1]}, g)};
  };
  addmm.run = [](const Inputs& in, const Sizes&) { return torch::addmm(in[0], in[1], in[2]); };
  addmm.flops = [](const Sizes& z) { return 2.0 * product(z) + static_cast<double>(z[0] * z[1]); };
  addmm.bytes = [](const Sizes& z, double e) {
    const double m = static_cast<double>(z[0]), n = static_cast<double>(z[1]), k = static_cast<double>(z[2]);
    return (m * k + k * n + 2 * m * n) * e;
  };
  out.push_back(addmm);

  OperatorSpec linear = mm;
  linear.name = "linear";
  linear.flops_formula = "2·M·N·K + M·N";
  linear.bytes_formula = "(M·K + N·K + N + M·N)·e";
  linear.inputs = [](const Sizes& z, torch::Generator& g) {
    return Inputs{standard_normal({z[0], z[2]}, g), standard_normal({z[1], z[2]}, g), standard_normal({z[1]}, g)};
  };
  linear.run = [](const Inputs& in, const Sizes&) { return torch::nn::functional::linear(in[0], in[1], in[2]); };
  linear.flops = addmm.flops;
  linear.bytes = [](const Sizes& z, double e) {
    const double m = static_cast<double>(z[0]), n = static_cast<double>(z[1]), k = static_cast<double>(z[2]);
    return (m * k + n * k + n + m * n) * e;
  };
  out.push_back(linear);

  OperatorSpec bmm;
  bmm.name = "bmm";
  bmm.size_names = {"B", "M", "N", "K"};
  bmm.flops_formula = "2·B·M·N·K";
  bmm.bytes_formula = "B·(M·K + K·N + M·N)·e";
  bmm.has_backward = true;
  bmm.inputs = [](const Sizes& z, torch::Generator& g) {
    return Inputs{standard_normal({z[0], z[1], z[3]}, g), standard_normal({z[0], z[3], z[2]}, g)};
  };
  bmm.run = [](const Inputs& in, const Sizes&) { return torch::bmm(in[0], in[1]); };
  bmm.flops = [](const Sizes& z) { return 2.0 * product(z); };
  bmm.reduction = [](const Sizes& z) { return largest({z[1], z[2], z[3]}); };
  bmm.bytes = [](const Sizes& z, double e) {
    const double b = static_cast<double>(z[0]), m = static_cast<double>(z[1]), n = static_cast<double>(z[2]),
                 k = static_cast<double>(z[3]);
    return b * (m * k + k * n + m * n) * e;
  };
  out.push_back(bmm);

  OperatorSpec mv;
  mv.name = "mv";
  mv.size_names = {"M", "K"};
  mv.flops_formula = "2·M·K";
  mv.bytes_formula = "(M·K + K + M)·e";
  mv.has_backward = true;
  mv.inputs = [](const Sizes& z, torch::Generator& g) {
    return Inputs{standard_normal({z[0], z[1]}, g), standard_normal({z[1]}, g)};
  };
  mv.run = [](const Inputs& in, const Sizes&) { return torch::mv(in[0], in[1]); };
  mv.flops = [](const Sizes& z) { return 2.0 * product(z); };
  mv.reduction = largest;
  mv.bytes = [](const Sizes& z, double e) {
    const double m = static_cast<double>(z[0]), k = static_cast<double>(z[1]);
    return (m * k + k + m) * e;
  };
  out.push_back(mv);
  return out;
}

std::vector<OperatorSpec> norms() {
  std::vector<OperatorSpec> out;
  OperatorSpec ln;
  ln.name = "layer_norm";
  ln.size_names = {"rows", "cols"};
  ln.flops_formula = "8·rows·cols";
  ln.bytes_formula = "(2·rows·cols + 2·cols)·e";
  ln.has_backward = true;
  ln.inputs = [](const Sizes& z, torch::Generator& g) {
    return Inputs{standard_normal({z[0], z[1]}, g), standard_normal({z[1]}, g), standard_normal({z[1]}, g)};
  };
  ln.run = [](const Inputs& in, const Sizes&) { return torch::layer_norm(in[0], {in[0].size(1)}, in[1], in[2], 1e-5); };
  ln.flops = [](const Sizes& z) { return 8.0 * product(z); };
  ln.reduction = largest;  // a row's columns; the weight's gradient sums the rows
  ln.bytes = [](const Sizes& z, double e) { return (2.0 * product(z) + 2.0 * static_cast<double>(z[1])) * e; };
  out.push_back(ln);

  OperatorSpec gn;
  gn.name = "group_norm";
  gn.size_names = {"N", "C", "L", "groups"};
  gn.flops_formula = "8·N·C·L";
  gn.bytes_formula = "(2·N·C·L + 2·C)·e";
  gn.has_backward = true;
  gn.inputs = [](const Sizes& z, torch::Generator& g) {
    return Inputs{standard_normal({z[0], z[1], z[2]}, g), standard_normal({z[1]}, g), standard_normal({z[1]}, g)};
  };
  gn.run = [](const Inputs& in, const Sizes& z) { return torch::group_norm(in[0], z[3], in[1], in[2], 1e-5); };
  gn.flops = [](const Sizes& z) { return 8.0 * static_cast<double>(z[0] * z[1] * z[2]); };
  gn.shape_problem = [](const Sizes& z) {
    return z[1] % z[3] == 0 ? std::string()
                            : "group_norm's channels C (" + std::to_string(z[1]) + ") must divide by its groups (" +
                                  std::to_string(z[3]) + ")";
  };
  gn.reduction = [](const Sizes& z) {
    return std::max(static_cast<double>(z[1] / z[3] * z[2]), static_cast<double>(z[0] * z[2]));
  };
  gn.bytes = [](const Sizes& z, double e) {
    return (2.0 * static_cast<double>(z[0] * z[1] * z[2]) + 2.0 * static_cast<double>(z[1])) * e;
  };
  out.push_back(gn);
  // ATen's native_group_norm (FlagPerf times it apart): the output of (output, mean, 1/std).
  OperatorSpec native = gn;
  native.name = "native_group_norm";
  native.run = [](const Inputs& in, const Sizes& z) {
    return std::get<0>(at::native_group_norm(in[0], in[1], in[2], z[0], z[1], z[2], z[3], 1e-5));
  };
  out.push_back(native);
  return out;
}

}  // namespace

namespace {

std::vector<OperatorSpec> reductions() {
  std::vector<OperatorSpec> out;
  out.push_back(rowwise("softmax", 5, true, [](const torch::Tensor& x) { return torch::softmax(x, -1); }));
  out.push_back(rowwise("log_softmax", 5, true, [](const torch::Tensor& x) { return torch::log_softmax(x, -1); }));
  out.push_back(rowwise("sum", 1, false, [](const torch::Tensor& x) { return x.sum(-1); }));
  out.push_back(rowwise("mean", 1, false, [](const torch::Tensor& x) { return x.mean(-1); }));
  out.push_back(rowwise(
      "amax", 1, false, [](const torch::Tensor& x) { return std::get<0>(x.max(-1)); }, false));
  out.push_back(rowwise("cumsum", 1, true, [](const torch::Tensor& x) { return x.cumsum(-1); }));
  out.push_back(rowwise("vector_norm", 2, false, [](const torch::Tensor& x) { return x.norm(2, -1); }));
  // A product of many factors near 1 (1 + x / 100): neither overflows nor vanishes.
  OperatorSpec prod = rowwise("prod", 1, false, [](const torch::Tensor& x) { return x.prod(-1); });
  prod.inputs = [](const Sizes& z, torch::Generator& g) {
    return Inputs{1.0 + standard_normal({z[0], z[1]}, g) / 100};
  };
  out.push_back(prod);

  OperatorSpec ce;
  ce.name = "cross_entropy";
  ce.size_names = {"rows", "classes"};
  ce.flops_formula = "5·rows·classes";
  ce.bytes_formula = "rows·classes·e + 8·rows + e";
  ce.has_backward = true;
  ce.inputs = [](const Sizes& z, torch::Generator& g) {
    return Inputs{standard_normal({z[0], z[1]}, g), at::randint(0, z[1], {z[0]}, g, torch::kLong)};
  };
  ce.run = [](const Inputs& in, const Sizes&) { return torch::nn::functional::cross_entropy(in[0], in[1]); };
  ce.flops = [](const Sizes& z) { return 5.0 * product(z); };
  ce.reduction = largest;
  ce.bytes = [](const Sizes& z, double e) { return product(z) * e + 8.0 * static_cast<double>(z[0]) + e; };
  out.push_back(ce);
  return out;
}

std::vector<OperatorSpec> pointwises() {
  return {pointwise("relu", 1, [](const torch::Tensor& x) { return torch::relu(x); }),
          pointwise("gelu", 8, [](const torch::Tensor& x) { return torch::gelu(x); }),
          pointwise("silu", 4, [](const torch::Tensor& x) { return torch::silu(x); }),
          pointwise("sigmoid", 3, [](const torch::Tensor& x) { return torch::sigmoid(x); }),
          pointwise("tanh", 1, [](const torch::Tensor& x) { return torch::tanh(x); }),
          pointwise("exp", 1, [](const torch::Tensor& x) { return torch::exp(x); }),
          binary("add", [](const torch::Tensor& a, const torch::Tensor& b) { return a + b; }),
          binary("sub", [](const torch::Tensor& a, const torch::Tensor& b) { return a - b; }),
          binary("mul", [](const torch::Tensor& a, const torch::Tensor& b) { return a * b; }),
          binary("div", [](const torch::Tensor& a, const torch::Tensor& b) { return a / b; }),
          binary("rsub", [](const torch::Tensor& a, const torch::Tensor& b) { return torch::rsub(a, b); }),
          binary("maximum", [](const torch::Tensor& a, const torch::Tensor& b) { return torch::maximum(a, b); }),
          binary("minimum", [](const torch::Tensor& a, const torch::Tensor& b) { return torch::minimum(a, b); }),
          pointwise("abs", 1, [](const torch::Tensor& x) { return torch::abs(x); }),
          pointwise("neg", 1, [](const torch::Tensor& x) { return torch::neg(x); }),
          pointwise("sin", 1, [](const torch::Tensor& x) { return torch::sin(x); }),
          pointwise("cos", 1, [](const torch::Tensor& x) { return torch::cos(x); }),
          pointwise("clamp", 2, [](const torch::Tensor& x) { return torch::clamp(x, -0.5, 0.5); }),
          positive(pointwise("log", 1, [](const torch::Tensor& x) { return torch::log(x); })),
          positive(pointwise("sqrt", 1, [](const torch::Tensor& x) { return torch::sqrt(x); })),
          positive(pointwise("rsqrt", 1, [](const torch::Tensor& x) { return torch::rsqrt(x); })),
          positive(pointwise("reciprocal", 1, [](const torch::Tensor& x) { return torch::reciprocal(x); })),
          positive(pointwise("pow", 1, [](const torch::Tensor& x) { return torch::pow(x, 2.5); }))};
}

std::vector<OperatorSpec> all_operators() {
  std::vector<OperatorSpec> out;
  for (auto group : {gemms(), norms(), reductions(), pointwises(), kernel_operators(), more_operators()})
    for (auto& spec : group) out.push_back(std::move(spec));
  add_kernel_alternatives(out);
  std::sort(out.begin(), out.end(), [](const OperatorSpec& a, const OperatorSpec& b) { return a.name < b.name; });
  return out;
}

}  // namespace

const std::vector<OperatorSpec>& operator_specs() {
  static const std::vector<OperatorSpec> specs = all_operators();
  return specs;
}

const OperatorSpec* find_operator(const std::string& name) {
  for (const auto& spec : operator_specs())
    if (spec.name == name) return &spec;
  return nullptr;
}

std::vector<std::string> operator_names() {
  std::vector<std::string> names;
  for (const auto& spec : operator_specs()) names.push_back(spec.name);
  return names;
}

std::string operator_table_markdown() {
  std::ostringstream md;
  md << "| operator | shape | FLOPs | bytes (e: the dtype's bytes) | backward | dtypes | implementations |\n"
        "| --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& spec : operator_specs()) {
    std::string shape, implementations = spec.implementation;
    for (const auto& n : spec.size_names) shape += (shape.empty() ? "" : " × ") + n;
    for (const auto& a : spec.alternatives) implementations += ", " + a.name;
    md << "| `" << spec.name << "` | " << shape << " | " << spec.flops_formula << " | " << spec.bytes_formula << " | "
       << (spec.has_backward ? "yes" : "no") << " | " << (spec.integer ? "integer" : "floating") << " | "
       << implementations << " |\n";
  }
  return md.str();
}

}  // namespace xpuperf::opbench
