#pragma once
// The operator benchmarks' catalogue (FlagPerf's operation/ benchmarks): each operator with how
// many sizes its shape takes and what they mean, how its inputs are made, how it runs, and the
// FLOP and byte formulas its throughput and roofline place come from. cases/operation/README.md's
// table is `xpuperf op --list --markdown`, held to this by a test.

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace xpuperf::opbench {

using OperatorInputs = std::vector<torch::Tensor>;
using OperatorRun = std::function<torch::Tensor(const OperatorInputs&, const std::vector<std::int64_t>&)>;

// An implementation of an operator beside ATen's: one of xpuperf's operators (ops/operators.h),
// through the kernel the device's vendor registered for it (NVIDIA's for CUDA, a plug-in's for
// PrivateUse1). Where the device has none, the dispatcher would run the composite, i.e. ATen's
// operators again, so the row is not measured.
struct Implementation {
  std::string name;    // "xpuperf"
  std::string kernel;  // the xpuperf operator whose kernel it runs: "add_rms_norm"
  OperatorRun run;
};

struct OperatorSpec {
  std::string name;                          // "mm", "layer_norm"
  std::vector<std::string> size_names;       // what each size of a shape is: {"M", "N", "K"}
  std::string flops_formula, bytes_formula;  // as the README writes them
  bool has_backward = false;
  bool integer = false;  // takes integer dtypes (int32, int16) only: the bitwise operators
  bool random = false;   // draws random numbers (dropout): two calls differ by design
  // A random operator's check instead of the float64 comparison, on the output and the inputs
  // (both on the CPU): what is wrong, or "" when the output is one the operator may give.
  std::function<std::string(const torch::Tensor&, const OperatorInputs&)> verify;
  // The inputs for a shape, in float32 on the CPU, drawn from `gen`; integer inputs (class labels)
  // stay integers and are not cast to the benchmark's dtype.
  std::function<std::vector<torch::Tensor>(const std::vector<std::int64_t>&, torch::Generator&)> inputs;
  // Runs the operator on the inputs (moved to the device, cast to the dtype) of a shape's sizes.
  OperatorRun run;
  std::string implementation = "aten";       // what `run` runs
  std::vector<Implementation> alternatives;  // beside it, for the devices that register their kernels
  std::function<double(const std::vector<std::int64_t>&)> flops;
  // Bytes read and written once, for elements of `element_bytes` (integer inputs at their own size).
  std::function<double(const std::vector<std::int64_t>&, double element_bytes)> bytes;
  // The most terms one element of the output or of an input's gradient sums (a GEMM's K, M or N; a
  // norm's columns or rows; 1 for a pointwise operator): the accuracy check's absolute tolerance
  // grows with it (op_measure.h).
  std::function<double(const std::vector<std::int64_t>&)> reduction = [](const std::vector<std::int64_t>&) {
    return 1.0;
  };
  // What is wrong with a shape of the right rank and positive sizes beyond that (group_norm's groups
  // must divide its channels); "" when nothing is.
  std::function<std::string(const std::vector<std::int64_t>&)> shape_problem = [](const std::vector<std::int64_t>&) {
    return std::string();
  };
};

// The spec with `alternative` as what it runs: forwards in inference mode, where the dispatcher
// takes a kernel registered for the device's key alone; a backward only where the kernel is
// registered for autograd too (otherwise its gradients would be the composite's, ATen's again).
OperatorSpec with_implementation(const OperatorSpec& spec, const Implementation& alternative,
                                 const torch::Device& device);
// Whether the device has the alternative's kernel (ops::has_kernel).
bool implementation_available(const Implementation& alternative, const torch::Device& device);

// Every operator, by name.
const std::vector<OperatorSpec>& operator_specs();
// Null when there is none of that name.
const OperatorSpec* find_operator(const std::string& name);
std::vector<std::string> operator_names();

// The README's table: operator, shape sizes, FLOPs, bytes, backward.
std::string operator_table_markdown();

}  // namespace xpuperf::opbench
