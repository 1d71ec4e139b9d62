#include "xpuperf/core/roofline.h"

#include <algorithm>

#include "xpuperf/core/specs.h"

namespace xpuperf {

nlohmann::json Roof::to_json() const {
  return {{"peak_tflops", peak_tflops},
          {"bandwidth_gbps", bandwidth_gbps},
          {"interconnect_gbps", interconnect_gbps},
          {"source", source}};
}

Roof Roof::from_json(const nlohmann::json& j) {
  Roof roof;
  if (!j.is_object()) return roof;
  if (j.contains("peak_tflops") && j["peak_tflops"].is_object())
    for (const auto& [dtype, value] : j["peak_tflops"].items())
      if (value.is_number() && value.get<double>() > 0) roof.peak_tflops[dtype] = value.get<double>();
  if (j.contains("bandwidth_gbps") && j["bandwidth_gbps"].is_number())
    roof.bandwidth_gbps = std::max(0.0, j["bandwidth_gbps"].get<double>());
  if (j.contains("interconnect_gbps") && j["interconnect_gbps"].is_number())
    roof.interconnect_gbps = std::max(0.0, j["interconnect_gbps"].get<double>());
  if (j.contains("source") && j["source"].is_string()) roof.source = j["source"].get<std::string>();
  return roof;
}

Roof datasheet_roof(const YAML::Node& chip) {
  Roof roof;
  if (!chip || !chip.IsMap()) return roof;
  for (const char* dtype : {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"})
    if (const double peak = chip_figure(chip, std::string("peak_tflops.") + dtype); peak > 0)
      roof.peak_tflops[dtype] = peak;
  roof.bandwidth_gbps = chip_figure(chip, "memory_bandwidth_gbps");
  roof.interconnect_gbps = chip_figure(chip, "interconnect.unidirectional_gbps");
  const std::string name = chip["name"] && chip["name"].IsScalar() ? chip["name"].Scalar() : std::string();
  roof.source = "datasheet" + (name.empty() ? std::string() : ": " + name);
  return roof;
}

std::optional<double> roof_ms(const Roof& roof, const std::string& dtype, double flops, double bytes) {
  double ms = 0;
  if (const auto peak = roof.peak_tflops.find(dtype); flops > 0 && peak != roof.peak_tflops.end())
    ms = flops / (peak->second * 1e12) * 1e3;
  if (bytes > 0 && roof.bandwidth_gbps > 0) ms = std::max(ms, bytes / (roof.bandwidth_gbps * 1e9) * 1e3);
  if (ms <= 0) return std::nullopt;
  return ms;
}

std::optional<double> roof_fraction(const Roof& roof, const std::string& dtype, double flops, double bytes,
                                    double measured_ms) {
  const auto least = roof_ms(roof, dtype, flops, bytes);
  if (!least || measured_ms <= 0) return std::nullopt;
  return *least / measured_ms;
}

std::optional<double> interconnect_fraction(const Roof& roof, double bus_gbps) {
  if (roof.interconnect_gbps <= 0 || bus_gbps <= 0) return std::nullopt;
  return bus_gbps / roof.interconnect_gbps;
}

bool compute_bound(const Roof& roof, const std::string& dtype, double flops, double bytes) {
  const auto peak = roof.peak_tflops.find(dtype);
  if (flops <= 0 || peak == roof.peak_tflops.end()) return false;
  if (bytes <= 0 || roof.bandwidth_gbps <= 0) return true;
  return flops / (peak->second * 1e12) >= bytes / (roof.bandwidth_gbps * 1e9);
}

}  // namespace xpuperf
