#include "xpuperf/opbench/more_operators.h"

#include <cmath>
#include <sstream>

#include "xpuperf/opbench/spec_helpers.h"

namespace xpuperf::opbench {
namespace {

using Sizes = std::vector<std::int64_t>;
using Inputs = OperatorInputs;
using Unary = std::function<torch::Tensor(const torch::Tensor&)>;
using Binary = std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>;

OperatorSpec of_n(const std::string& name, const std::string& flops_formula, const std::string& bytes_formula) {
  OperatorSpec s;
  s.name = name;
  s.size_names = {"n"};
  s.flops_formula = flops_formula;
  s.bytes_formula = bytes_formula;
  return s;
}

// a ⊙ b into booleans; b equals a in about half the places, so that eq, ge and le see equal pairs.
OperatorSpec comparison(const std::string& name, Binary f) {
  OperatorSpec s = of_n(name, "n", "2·n·e + n");
  s.inputs = [](const Sizes& z, torch::Generator& g) {
    const torch::Tensor a = standard_normal({z[0]}, g);
    const torch::Tensor same = at::rand({z[0]}, g) < 0.5;
    return Inputs{a, torch::where(same, a, standard_normal({z[0]}, g))};
  };
  s.run = [f](const Inputs& in, const Sizes&) { return f(in[0], in[1]); };
  s.flops = [](const Sizes& z) { return static_cast<double>(z[0]); };
  s.bytes = [](const Sizes& z, double e) { return static_cast<double>(z[0]) * (2 * e + 1); };
  return s;
}

// Integers in [-2¹⁴, 2¹⁴), exact in int16 and int32, drawn as floats the dtype then casts.
torch::Tensor integers(std::int64_t n, torch::Generator& g) {
  return at::randint(-16384, 16384, {n}, g, torch::kFloat32);
}

OperatorSpec bitwise(const std::string& name, int operands, std::function<torch::Tensor(const Inputs&)> f) {
  OperatorSpec s = of_n(name, "n", std::to_string(operands + 1) + "·n·e");
  s.integer = true;
  s.inputs = [operands](const Sizes& z, torch::Generator& g) {
    Inputs in;
    for (int i = 0; i < operands; ++i) in.push_back(integers(z[0], g));
    return in;
  };
  s.run = [f](const Inputs& in, const Sizes&) { return f(in); };
  s.flops = [](const Sizes& z) { return static_cast<double>(z[0]); };
  s.bytes = [operands](const Sizes& z, double e) { return static_cast<double>(z[0]) * (operands + 1) * e; };
  return s;
}

// A test of each element into booleans; one element in seven is ±inf and one in eleven NaN.
OperatorSpec classify(const std::string& name, Unary f) {
  OperatorSpec s = of_n(name, "n", "n·e + n");
  s.inputs = [](const Sizes& z, torch::Generator& g) {
    torch::Tensor x = standard_normal({z[0]}, g);
    const torch::Tensor i = torch::arange(z[0]);
    x = torch::where(i % 7 == 3, torch::full_like(x, INFINITY) * x.sign(), x);
    return Inputs{torch::where(i % 11 == 5, torch::full_like(x, NAN), x)};
  };
  s.run = [f](const Inputs& in, const Sizes&) { return f(in[0]); };
  s.flops = [](const Sizes& z) { return static_cast<double>(z[0]); };
  s.bytes = [](const Sizes& z, double e) { return static_cast<double>(z[0]) * (e + 1); };
  return s;
}

OperatorSpec where() {
  OperatorSpec s = of_n("where", "n", "3·n·e + n");
  s.has_backward = true;
  s.inputs = [](const Sizes& z, torch::Generator& g) {
    return Inputs{at::rand({z[0]}, g) < 0.5, standard_normal({z[0]}, g), standard_normal({z[0]}, g)};
  };
  s.run = [](const Inputs& in, const Sizes&) { return torch::where(in[0], in[1], in[2]); };
  s.flops = [](const Sizes& z) { return static_cast<double>(z[0]); };
  s.bytes = [](const Sizes& z, double e) { return static_cast<double>(z[0]) * (3 * e + 1); };
  return s;
}

OperatorSpec of_rows(const std::string& name, const std::string& flops_formula, const std::string& bytes_formula) {
  OperatorSpec s;
  s.name = name;
  s.size_names = {"rows", "cols"};
  s.flops_formula = flops_formula;
  s.bytes_formula = bytes_formula;
  s.inputs = [](const Sizes& z, torch::Generator& g) { return Inputs{standard_normal({z[0], z[1]}, g)}; };
  return s;
}

OperatorSpec triu() {
  OperatorSpec s = of_rows("triu", "rows·cols", "2·rows·cols·e");
  s.has_backward = true;
  s.run = [](const Inputs& in, const Sizes&) { return torch::triu(in[0]); };
  s.flops = product;  // a comparison of the row and the column an element
  s.bytes = [](const Sizes& z, double e) { return 2 * product(z) * e; };
  return s;
}

OperatorSpec var_mean() {
  OperatorSpec s = of_rows("var_mean", "3·rows·cols", "(rows·cols + 2·rows)·e");
  s.has_backward = true;
  s.run = [](const Inputs& in, const Sizes&) {
    const std::vector<std::int64_t> last = {-1};
    const auto [var, mean] = torch::var_mean(in[0], last);
    return torch::stack({var, mean});
  };
  s.flops = [](const Sizes& z) { return 3 * product(z); };
  s.bytes = [](const Sizes& z, double e) { return (product(z) + 2.0 * static_cast<double>(z[0])) * e; };
  s.reduction = [](const Sizes& z) { return static_cast<double>(z[1]); };
  return s;
}

// The whole tensor reduced to one value (torch.max(x), torch.min(x)).
OperatorSpec extreme(const std::string& name, Unary f) {
  OperatorSpec s = of_n(name, "n", "(n + 1)·e");
  s.has_backward = true;
  s.inputs = [](const Sizes& z, torch::Generator& g) { return Inputs{standard_normal({z[0]}, g)}; };
  s.run = [f](const Inputs& in, const Sizes&) { return f(in[0]); };
  s.flops = [](const Sizes& z) { return static_cast<double>(z[0]); };
  s.bytes = [](const Sizes& z, double e) { return (static_cast<double>(z[0]) + 1) * e; };
  return s;
}

// Whether every element of a row is non-zero; one row in three holds a zero.
OperatorSpec all() {
  OperatorSpec s = of_rows("all", "rows·cols", "rows·cols·e + rows");
  s.inputs = [](const Sizes& z, torch::Generator& g) {
    torch::Tensor x = standard_normal({z[0], z[1]}, g);
    const torch::Tensor rows = torch::arange(z[0]).unsqueeze(1) % 3 == 0;
    const torch::Tensor first = (torch::arange(z[1]) == z[1] / 2).unsqueeze(0);
    return Inputs{torch::where(rows & first, torch::zeros_like(x), x)};
  };
  s.run = [](const Inputs& in, const Sizes&) { return in[0].all(-1); };
  s.flops = product;
  s.bytes = [](const Sizes& z, double e) { return product(z) * e + static_cast<double>(z[0]); };
  return s;
}

// Rows of a table picked by token ids (a language model's first layer).
OperatorSpec embedding() {
  OperatorSpec s;
  s.name = "embedding";
  s.size_names = {"tokens", "vocab", "dim"};
  s.flops_formula = "tokens·dim";
  s.bytes_formula = "2·tokens·dim·e + 8·tokens";
  s.has_backward = true;
  s.inputs = [](const Sizes& z, torch::Generator& g) {
    return Inputs{standard_normal({z[1], z[2]}, g), at::randint(0, z[1], {z[0]}, g, torch::kLong)};
  };
  s.run = [](const Inputs& in, const Sizes&) { return torch::embedding(in[0], in[1]); };
  s.flops = [](const Sizes& z) { return static_cast<double>(z[0] * z[2]); };  // a copy an element
  s.bytes = [](const Sizes& z, double e) {
    return 2.0 * static_cast<double>(z[0] * z[2]) * e + 8.0 * static_cast<double>(z[0]);
  };
  // A row's gradient sums the tokens that picked it.
  s.reduction = [](const Sizes& z) { return static_cast<double>(z[0]); };
  return s;
}

// Dropout at p = 0.5 in training: each element is 0 or twice the input (exact in every dtype),
// and the zeros are half of them within five standard deviations.
OperatorSpec dropout() {
  OperatorSpec s = of_n("dropout", "2·n", "2·n·e + n");
  s.random = true;
  s.inputs = [](const Sizes& z, torch::Generator& g) {
    const torch::Tensor x = standard_normal({z[0]}, g);
    return Inputs{torch::where(x == 0, torch::ones_like(x), x)};  // no zero of its own
  };
  s.run = [](const Inputs& in, const Sizes&) { return torch::dropout(in[0], 0.5, true); };
  s.flops = [](const Sizes& z) { return 2.0 * static_cast<double>(z[0]); };
  s.bytes = [](const Sizes& z, double e) { return static_cast<double>(z[0]) * (2 * e + 1); };
  s.verify = [](const torch::Tensor& out, const Inputs& in) {
    const torch::Tensor x = in[0].to(torch::kFloat64), y = out.to(torch::kFloat64);
    const torch::Tensor dropped = y == 0;
    const auto wrong = ((~dropped) & (y != 2 * x)).sum().item<std::int64_t>();
    const double n = static_cast<double>(y.numel());
    const double zeros = dropped.sum().item<double>(), sigma = std::sqrt(n * 0.25);
    std::ostringstream problem;
    if (wrong > 0) problem << wrong << " kept elements are not twice their input";
    if (std::abs(zeros - n / 2) > 5 * sigma + 1)
      problem << (wrong > 0 ? "; " : "") << zeros << " of " << n << " elements dropped, not about half";
    return problem.str();
  };
  return s;
}

// a ⊗ b of two vectors.
OperatorSpec outer() {
  OperatorSpec s;
  s.name = "outer";
  s.size_names = {"M", "N"};
  s.flops_formula = "M·N";
  s.bytes_formula = "(M + N + M·N)·e";
  s.has_backward = true;
  s.inputs = [](const Sizes& z, torch::Generator& g) {
    return Inputs{standard_normal({z[0]}, g), standard_normal({z[1]}, g)};
  };
  s.run = [](const Inputs& in, const Sizes&) { return torch::outer(in[0], in[1]); };
  s.flops = product;
  s.bytes = [](const Sizes& z, double e) { return (static_cast<double>(z[0] + z[1]) + product(z)) * e; };
  s.reduction = [](const Sizes& z) { return static_cast<double>(std::max(z[0], z[1])); };
  return s;
}

// ATen's native_dropout (the output and its mask), checked on the output as dropout is.
OperatorSpec native_dropout() {
  OperatorSpec s = dropout();
  s.name = "native_dropout";
  s.bytes_formula = "2·n·e + 2·n";
  s.run = [](const Inputs& in, const Sizes&) { return std::get<0>(at::native_dropout(in[0], 0.5, true)); };
  s.bytes = [](const Sizes& z, double e) { return static_cast<double>(z[0]) * (2 * e + 2); };
  return s;
}

}  // namespace

std::vector<OperatorSpec> more_operators() {
  std::vector<OperatorSpec> out = {
      comparison("eq", [](const torch::Tensor& a, const torch::Tensor& b) { return torch::eq(a, b); }),
      comparison("ne", [](const torch::Tensor& a, const torch::Tensor& b) { return torch::ne(a, b); }),
      comparison("gt", [](const torch::Tensor& a, const torch::Tensor& b) { return torch::gt(a, b); }),
      comparison("ge", [](const torch::Tensor& a, const torch::Tensor& b) { return torch::ge(a, b); }),
      comparison("lt", [](const torch::Tensor& a, const torch::Tensor& b) { return torch::lt(a, b); }),
      comparison("le", [](const torch::Tensor& a, const torch::Tensor& b) { return torch::le(a, b); }),
      bitwise("bitwise_and", 2, [](const Inputs& in) { return torch::bitwise_and(in[0], in[1]); }),
      bitwise("bitwise_or", 2, [](const Inputs& in) { return torch::bitwise_or(in[0], in[1]); }),
      bitwise("bitwise_not", 1, [](const Inputs& in) { return torch::bitwise_not(in[0]); }),
      classify("isinf", [](const torch::Tensor& x) { return torch::isinf(x); }),
      classify("isnan", [](const torch::Tensor& x) { return torch::isnan(x); }),
      where(),
      triu(),
      var_mean(),
      extreme("max", [](const torch::Tensor& x) { return x.max(); }),
      extreme("min", [](const torch::Tensor& x) { return x.min(); }),
      all(),
      embedding(),
      dropout(),
      native_dropout(),
      outer()};
  return out;
}

}  // namespace xpuperf::opbench
