#pragma once
// Which operators a stretch of work calls, with what: every outermost ATen call (one not made by
// another ATen operator) through LibTorch's RecordFunction callbacks, on every thread (a backward
// runs on the autograd engine's), with its arguments as written down for a replay: each tensor's
// sizes, strides, dtype and whether it was on the device; each number, list, string or device.
// Distinct calls are counted, so a training step becomes a list of calls and how many of each.
// What the census cannot see: kernels launched outside the dispatcher, and a device graph's replay
// (it calls no operator). Torch-free header: RecordFunction stays in op_census.cpp.

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace xpuperf::torchrt {

struct CensusCall {
  std::string op;        // "aten::addmm"
  std::string overload;  // "" or "Tensor", as the schema names it
  // One entry an argument: {"tensor": {"sizes", "strides", "dtype", "on": "device"|"cpu"}},
  // {"int": 3}, {"double": 0.1} (or "inf", "-inf", "nan"), {"bool": true}, {"string": "tanh"}, {"none": true}, {"ints":
  // [..]},
  // {"doubles": [..]}, {"bools": [..]}, {"tensors": [..]}, {"optional_tensors": [.. or null]},
  // {"device": "device"|"cpu"}, {"generator": true}, or {"unsupported": "what"}.
  nlohmann::json arguments;
  // Autocast's dtype where the call ran under it ("BFloat16"), else "": a replay runs it so too,
  // for the dispatcher to cast its arguments as it did (an fp32 weight to bf16).
  std::string autocast;
  std::int64_t calls = 0;  // over the whole census
  bool backward = false;   // made by an autograd node (a backward pass)

  nlohmann::json to_json() const;
  static CensusCall from_json(const nlohmann::json& j);  // throws std::runtime_error naming the key
};

// A census as a case writes it (FINISHED's `operator_census`) and `xpuperf op --census` reads it.
struct Census {
  std::string source;             // the file it was read from ("" while a case writes it)
  std::string what;               // "gpt2:libtorch on cuda" (the case and device that ran it), or ""
  std::string unit = "step";      // "step" (training) or "batch" (inference)
  double units = 1;               // how many the census watched
  std::optional<double> step_ms;  // the case's own time of one, where it measured one
  std::string step_ms_source;     // how
  std::vector<CensusCall> calls;
  // The backward nodes of C++ autograd functions that called no operator (their kernels launched
  // without the dispatcher), by function, over the census: time in the step that no call holds.
  std::map<std::string, std::int64_t> opaque_backward;

  nlohmann::json to_json() const;
  // Throws std::runtime_error naming `source` when `j` is not a census.
  static Census from_json(const nlohmann::json& j, const std::string& source);
};

// Starts recording on construction; stop() ends it and returns the distinct calls in the order
// each first ran. One at a time in a process.
class OperatorCensus {
 public:
  OperatorCensus();
  ~OperatorCensus();
  OperatorCensus(const OperatorCensus&) = delete;
  OperatorCensus& operator=(const OperatorCensus&) = delete;

  std::vector<CensusCall> stop();
  // The backward nodes of C++ autograd functions that called no operator, by function (Census's
  // opaque_backward); read after stop().
  std::map<std::string, std::int64_t> opaque_backward() const;

  struct Recording;  // what the callbacks add to (op_census.cpp)

 private:
  std::unique_ptr<Recording> recording_;
};

// "bf16" of LibTorch's "BFloat16" (the operator cases' names; int64, bool, ... for the others).
std::string census_dtype_text(const std::string& c10_name);
// "bf16[4096,768]" of a tensor argument; a transposed or strided one adds its strides
// ("bf16[768,4096]s[1,768]"), a CPU one "cpu:".
std::string census_tensor_text(const nlohmann::json& tensor);
// The call's arguments in one line: tensors as above, other values as written, "…" past `width`.
std::string census_call_text(const CensusCall& call, std::size_t width = 160);

}  // namespace xpuperf::torchrt
