#pragma once
// One row of an operator benchmark: an operator, a shape, a dtype and a device, timed and checked.
//
// Timing: the inputs rotate through copies whose bytes pass `rotate_bytes` (a cache larger than
// the operator's inputs would otherwise serve every call after the first), and before each timed
// call a buffer of `flush_bytes` is written by a fill, not by the operator under test. The device's
// own time comes from its vendor's timeline (torchrt::DeviceTimeline) where it brings one, else from
// the host clock around the call and a synchronisation. Accuracy: the output (and the inputs'
// gradients) against the same operator in float64 on the CPU, from the same inputs as rounded to
// the dtype. The tolerance is torch.testing's rtol for the dtype and an atol that grows with the
// terms an element sums, 1e-4 a term (FlagGems' accuracy tests' convention): a sum of K terms
// accumulated in float32 carries an absolute error that grows with K, which an element that
// cancels to near 0 cannot hide behind its own magnitude. The worst ratio to torch.testing's own
// defaults is kept beside it.

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "xpuperf/opbench/operators.h"

namespace xpuperf::opbench {

struct MeasureOptions {
  int warmup = 5;
  int samples = 50;
  // Blocks of `samples` calls are timed until this many seconds have passed: a device under load
  // for a second runs at the clocks its power limit allows, as a model's step does, not at the
  // boost of a short burst (an H200's bf16 GEMM of 8192³: 1.39 ms in 50 calls, 1.64 ms after a
  // second).
  double min_seconds = 1.0;
  // The check against float64 on the CPU; off, a row claims no accuracy (a second timing run). A
  // GEMM of 8192³ takes the CPU tens of seconds in float64, with its gradients.
  bool check_accuracy = true;
  double rotate_bytes = 256.0 * (1 << 20);
  double flush_bytes = 64.0 * (1 << 20);
  std::uint64_t seed = 1234;
  // The inputs' values: the operator's own draws (normal), or `levels`: k/8 for k uniform in
  // [-8, 8], what the GEMM base cases multiply (exact, so that their outputs check exactly). A
  // chip's power, and so its clocks under its power limit, depend on the bits it multiplies: an
  // H200's bf16 GEMM of 8192³ sustains 664 TFLOP/s on normal values and 767 on levels (torch.mm,
  // the same call). A row is compared with the base cases' roof like for like on levels.
  bool levels = false;
  // Where the device has graphs (torchrt::DeviceGraph): also this many calls captured as one graph
  // (each on the next of the rotated input sets, no flush between them) and the graph replayed, for
  // the time of a call without the host's launches; 0: none.
  int graph_calls = 0;
  // The device's kernels of one call, through the profiler; false where a second timing of the same
  // call needs only its time (the census's warm replay).
  bool record_kernels = true;
};

struct ErrorStats {
  double max_abs = 0, mean_abs = 0, max_rel = 0, mean_rel = 0;
  // The largest |actual − reference| / (atol + rtol·|reference|): 1 is what the tolerance allows;
  // against the row's tolerance, and against torch.testing's defaults for the dtype.
  double worst_over_tolerance = 0, worst_over_default = 0;
};

struct OperatorRow {
  std::string op, dtype, device, implementation = "aten";
  std::vector<std::int64_t> sizes;
  // Time of one call, device side: median, 10th and 90th percentiles, coefficient of variation.
  double median_ms = 0, p10_ms = 0, p90_ms = 0, cv = 0;
  int samples = 0;
  bool device_timed = false;  // from the device's timeline; false: the host clock with a synchronisation
  double host_ms = 0;         // the host's time to issue one call (median), without waiting for it
  double cold_ms = 0;         // the first call of the process for this row, waited for
  double flops = 0, bytes = 0;
  double tflops = 0, gb_per_s = 0, intensity = 0;  // FLOP per byte
  ErrorStats error, gradient_error;
  bool has_gradients = false;
  double atol = 0, rtol = 0;   // the row's tolerance
  double default_atol = 0;     // torch.testing's, for the dtype
  bool checked = false;        // the accuracy check ran (check_accuracy)
  bool accurate = false;       // output and gradients within the tolerance (and nothing infinite or NaN)
  bool deterministic = false;  // two calls on the same inputs are bitwise equal (a random operator's are not)
  bool levels = false;         // the inputs were the base cases' levels (MeasureOptions::levels)
  std::string check_problem;   // a random operator's check (OperatorSpec::verify): what was wrong
  // The device's kernels one call ran, by name, longest first (LibTorch's profiler); where there
  // are none, why.
  std::vector<std::string> kernels;
  std::string kernels_note;
  // graph_calls > 0: the time of one call within a replayed device graph (the median replay over
  // its calls), or why there is none.
  std::optional<double> graph_ms;
  std::string graph_note;
  // The timed calls' window, seconds since the epoch: the monitor's power over it gives the energy.
  double started_unix = 0, ended_unix = 0;
  // The least time the roofs allow over the median (core/roofline.h); absent where a roof lacks a
  // figure the row needs.
  std::optional<double> datasheet_fraction, measured_fraction;
  // An implementation beside ATen's: ATen's median time over this one's, the same shape and dtype;
  // absent for ATen's own row, and where either row failed its accuracy check (a wrong result
  // earns no speed-up), which `speedup_void` then says.
  std::optional<double> speedup;
  std::string speedup_void;
  // A call replayed from a census (census_replay.h): its arguments in one line, how many times a
  // step made it, whether a backward did, and whether its FLOPs come from a formula (else 0, and
  // its roof is its bytes' alone).
  std::string call;
  double calls_per_step = 0;
  std::optional<double> warm_ms;  // the same call with warm caches: no flush, no rotation
  bool backward = false, flops_known = true;
  // A collective (collective_case.cpp): its ranks, nccl-tests' bus factor (the bus bandwidth is
  // gb_per_s, the algorithm bandwidth, times it), and the algorithm its backend chose, or why
  // none is known. 0 ranks: not a collective.
  int ranks = 0;
  double bus_factor = 0, bus_gb_per_s = 0;
  std::string algorithm;

  nlohmann::json to_json() const;
};

// `actual` against `reference` (float64), element by element, under the tolerance (atol, rtol) and
// under torch.testing's default atol for the dtype.
ErrorStats error_stats(const torch::Tensor& actual, const torch::Tensor& reference, double rtol, double atol,
                       double default_atol);

// torch.testing's default (rtol, atol) for a dtype.
std::pair<double, double> default_tolerance(torch::Dtype dtype);
// "bf16" -> kBFloat16, "int32" -> kInt; throws std::invalid_argument naming the choices.
torch::Dtype parse_dtype(const std::string& name);
std::string dtype_name(torch::Dtype dtype);

using OperatorCall = std::function<void(const std::vector<torch::Tensor>&)>;

// Times `call` as measure_operator does (warm-up, the inputs rotated through `sets`, a cache flush
// before each call, the device's timeline or the host clock, blocks until min_seconds) and records
// the kernels of one call: the row's time, window and kernel fields.
void time_operator_call(const OperatorCall& call, const std::vector<std::vector<torch::Tensor>>& sets,
                        const torch::Device& device, const MeasureOptions& options, OperatorRow& row);

// A device's error in a row, as the user's message: out of memory with the MiB the row needs
// (`needed_bytes` in `copies` rotated sets and the cache flush; `buffers` says whose, `lower` what
// to lower), else the error's first line and `hint`.
std::runtime_error row_error(const std::string& what, const c10::Error& e, double needed_bytes, std::size_t copies,
                             const std::string& buffers, const std::string& lower, const std::string& hint);

// Measures one row; throws std::runtime_error with the message for the user (a dtype the device
// lacks, buffers larger than its memory, with the bytes needed).
OperatorRow measure_operator(const OperatorSpec& spec, const std::vector<std::int64_t>& sizes, torch::Dtype dtype,
                             const torch::Device& device, const MeasureOptions& options);

}  // namespace xpuperf::opbench
