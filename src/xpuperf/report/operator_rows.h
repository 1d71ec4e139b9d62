#pragma once
// An operator case's rows across its rounds (the `operators` records of summary_model.h): one row an
// operator × shape × dtype × implementation, its time over the ok rounds, and where it stands on
// the roofs. The summary's table, its CSV, report.html's roofline and `xpuperf compare` read them
// from here.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "xpuperf/core/roofline.h"
#include "xpuperf/report/stats.h"
#include "xpuperf/report/summary_model.h"

namespace xpuperf::report {

struct OperatorRowStats {
  std::string key;  // "mm 8192×8192×8192 bf16 aten": the row within its case
  std::string op, shape, dtype, implementation;
  std::vector<double> median_ms;  // the row's median time of one call, one an ok round
  Aggregate time;                 // over median_ms
  nlohmann::json last;            // the last ok round's row as written (FLOPs, bytes, errors, verdicts)
  double flops = 0, bytes = 0, tflops = 0, gb_per_s = 0, intensity = 0;  // at the mean time
  double bus_gb_per_s = 0;  // a collective's bus bandwidth (nccl-tests' busbw), placed on the interconnect
  std::optional<double> datasheet_fraction, measured_fraction;    // at the mean time
  std::optional<double> energy_per_call_j;                        // mean over the rounds that have it
  bool checked = false, accurate = false, deterministic = false;  // the last ok round's verdicts
  // An implementation beside ATen's: ATen's mean time over this one's (same operator, shape and
  // dtype); void where either row is inaccurate, which `speedup_void` says.
  std::optional<double> speedup;
  std::string speedup_void;
};

// The rows of an operator case, in the order of its first ok round; `measured` is the run's
// measured roof (measured_roof.h), the datasheet's is the rounds' own.
std::vector<OperatorRowStats> operator_rows(const CaseResult& c, const Roof& measured);

// A fraction of a roof as a percentage ("86.1 %"); "–" when there is none.
std::string fraction_text(const std::optional<double>& fraction);

// The `vs aten` cell: "1.23×", "void: ..." or "–".
std::string speedup_text(const OperatorRowStats& row);

// "8192×8192×8192" of a row's shape (a list of sizes).
std::string shape_text(const nlohmann::json& shape);

}  // namespace xpuperf::report
