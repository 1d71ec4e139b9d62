#pragma once
// Base cases: hardware micro-benchmarks (compute per precision, memory, interconnect, launch
// latency). Each implementation registers itself for a metric and a backend ("cpu", "cuda"); the
// runner (base_runner.h) picks one, runs it and reports figures beside the datasheet's.
// Torch-free and CUDA-free: the .cu files and the collectives (LibTorch) implement it.

#include <algorithm>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "xpuperf/core/config.h"
#include "xpuperf/core/files.h"
#include "xpuperf/core/rank_env.h"

namespace xpuperf::base {

// One measured figure. `datasheet` names the vendor's specs.yaml figure it compares with
// (a path under chips.<hardware>, e.g. "peak_tflops.bf16"); empty when there is none.
struct Figure {
  std::string name;
  double value = 0;
  std::string unit;
  std::string datasheet;
};

struct BaseResult {
  std::vector<Figure> figures;                        // the first is the headline
  nlohmann::json details = nlohmann::json::object();  // sweeps, matrices, per-run samples
  std::string implementation;                         // what computed it: "cuBLASLt (best of 8 algorithms)", "OpenBLAS"
  bool correct = true;                                // the results check passed
  std::string check;                                  // what was checked, and how it went
  double started_unix = 0;                            // the measured window (for the power drawn meanwhile)
  double ended_unix = 0;
};

struct BaseContext {
  std::string metric;  // e.g. "computation-BF16"
  Config config;       // cases/base/<metric>/config.yaml merged with overrides
  int device = 0;      // accelerator index (local rank's by default)
  RankEnv env;         // for collectives; world size 1 otherwise
};

class BaseBenchmark {
 public:
  virtual ~BaseBenchmark() = default;
  // Why it cannot run here ("" when it can): no such device, too few devices, a precision the
  // hardware or library lacks. Cheap; called before run.
  virtual std::string filter(const BaseContext& ctx) = 0;
  // Measures; throws std::runtime_error with a message for the user when it cannot.
  virtual BaseResult run(const BaseContext& ctx) = 0;
};

using BaseFactory = std::function<std::unique_ptr<BaseBenchmark>()>;

// Registers at static-initialisation time (see XPUPERF_REGISTER_BASE).
bool register_base(const std::string& metric, const std::string& backend, BaseFactory factory);
// The implementation of a metric for a backend; nullptr when none is built in.
std::unique_ptr<BaseBenchmark> make_base(const std::string& metric, const std::string& backend);
// The backends ("cpu", "cuda") built for a metric, sorted.
std::vector<std::string> base_backends(const std::string& metric);

// Median and best (largest) of a list of rates; empty lists give 0.
// Inline: vendors' plug-ins use them without linking xpuperf.
inline double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}
inline double best_of(const std::vector<double>& values) {
  return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
}

}  // namespace xpuperf::base

#define XPUPERF_BASE_CONCAT2(a, b) a##b
#define XPUPERF_BASE_CONCAT(a, b) XPUPERF_BASE_CONCAT2(a, b)
// XPUPERF_REGISTER_BASE("main_memory-bandwidth", "cpu", MyClass);
#define XPUPERF_REGISTER_BASE(metric, backend, Class)                         \
  static const bool XPUPERF_BASE_CONCAT(xpuperf_base_registered_, __LINE__) = \
      ::xpuperf::base::register_base(metric, backend, [] { return std::make_unique<Class>(); })
