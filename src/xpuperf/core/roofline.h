#pragma once
// The roofline an operator's row is placed on: the chip's peak rate per precision and its memory
// bandwidth. Two roofs: the datasheet's (vendors/<v>/specs.yaml) and the one this machine's base
// cases measured (computation-<PRECISION>'s median TFLOP/s, main_memory-bandwidth's fastest median
// of read, copy and triad), and for the collectives the interconnect's one-direction rate (the
// datasheet's, or interconnect-allreduce's bus bandwidth at its largest size). A row's fraction of a roof is the least
// time the roof allows for its FLOPs and bytes over the time it took, so 1 is a row on the roof, whichever side bounds
// it.

#include <yaml-cpp/yaml.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace xpuperf {

struct Roof {
  std::map<std::string, double> peak_tflops;  // by dtype, as operator cases name them: bf16, fp32, ...
  double bandwidth_gbps = 0;
  double interconnect_gbps = 0;  // one direction, what a collective's bus bandwidth is compared with
  std::string source;            // what the figures are: "datasheet: NVIDIA H200 SXM 141GB", "measured: run..."

  bool empty() const { return peak_tflops.empty() && bandwidth_gbps <= 0 && interconnect_gbps <= 0; }
  nlohmann::json to_json() const;
  // Null or a malformed object: an empty roof.
  static Roof from_json(const nlohmann::json& j);
};

// The datasheet's roof of a chip's specs (chip_specs, core/specs.h); empty for a null node.
Roof datasheet_roof(const YAML::Node& chip);

// The least milliseconds `flops` and `bytes` take under the roof at `dtype`: the larger of
// flops / peak and bytes / bandwidth. A side the roof lacks (no peak for the dtype, no bandwidth)
// is left out, which can only make the time shorter and the row's fraction lower: a GEMM placed
// on a run that measured computation-BF16 alone still has its fraction. Nothing when the roof has
// neither side the row needs.
std::optional<double> roof_ms(const Roof& roof, const std::string& dtype, double flops, double bytes);

// roof_ms over `measured_ms`; nothing where roof_ms has nothing or nothing was measured.
std::optional<double> roof_fraction(const Roof& roof, const std::string& dtype, double flops, double bytes,
                                    double measured_ms);

// A collective's bus bandwidth over the roof's interconnect; nothing where the roof has none.
std::optional<double> interconnect_fraction(const Roof& roof, double bus_gbps);

// The peak the row's FLOPs meet before its bytes do: whether the roof bounds it by compute.
bool compute_bound(const Roof& roof, const std::string& dtype, double flops, double bytes);

}  // namespace xpuperf
