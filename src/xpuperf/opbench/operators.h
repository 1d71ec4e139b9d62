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

struct OperatorSpec {
  std::string name;                          // "mm", "layer_norm"
  std::vector<std::string> size_names;       // what each size of a shape is: {"M", "N", "K"}
  std::string flops_formula, bytes_formula;  // as the README writes them
  bool has_backward = false;
  // The inputs for a shape, in float32 on the CPU, drawn from `gen`; integer inputs (class labels)
  // stay integers and are not cast to the benchmark's dtype.
  std::function<std::vector<torch::Tensor>(const std::vector<std::int64_t>&, torch::Generator&)> inputs;
  // Runs the operator on the inputs (moved to the device, cast to the dtype) of a shape's sizes.
  std::function<torch::Tensor(const std::vector<torch::Tensor>&, const std::vector<std::int64_t>&)> run;
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

// Every operator, by name.
const std::vector<OperatorSpec>& operator_specs();
// Null when there is none of that name.
const OperatorSpec* find_operator(const std::string& name);
std::vector<std::string> operator_names();

// The README's table: operator, shape sizes, FLOPs, bytes, backward.
std::string operator_table_markdown();

}  // namespace xpuperf::opbench
