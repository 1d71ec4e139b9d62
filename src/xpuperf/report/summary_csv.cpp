#include "xpuperf/report/summary_csv.h"

#include <sstream>
#include <vector>

namespace xpuperf::report {
namespace {
using nlohmann::json;

// The case's columns, then the round's, in this order.
const std::vector<const char*> kCaseColumns = {"case", "family", "hardware", "nnodes", "nproc"};
const std::vector<const char*> kRoundColumns = {"round",
                                                "status",
                                                "converged",
                                                "global_steps",
                                                "num_trained_samples",
                                                "training_samples_per_second",
                                                "time_to_target",
                                                "steps_to_target",
                                                "e2e_time",
                                                "init_time",
                                                "raw_train_time",
                                                "final_metric_name",
                                                "final_metric",
                                                "final_metric_target",
                                                "mfu",
                                                "energy_j",
                                                "energy_per_sample_j",
                                                "peak_host_mem_bytes",
                                                "peak_device_mem_bytes",
                                                "value",
                                                "unit",
                                                "mean_power_w",
                                                "perf_per_watt",
                                                "validation_whole",
                                                "validation_core",
                                                "inference_whole",
                                                "inference_core",
                                                "validation_accuracy",
                                                "inference_accuracy",
                                                "latency_p99_ms",
                                                "prefill_tokens_per_second",
                                                "decode_tpot_ms",
                                                "offline_output_tokens_per_second",
                                                "server_max_rate_within_bounds",
                                                "reason"};

// A field as RFC 4180 writes it: quoted when it holds a comma, a quote or a line break.
std::string field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string cell(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || object[key].is_null()) return "";
  const json& v = object[key];
  if (v.is_string()) return field(v.get<std::string>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return v.dump();  // the shortest text that reads back as the same number
  return field(v.dump());
}

}  // namespace

std::string summary_csv(const json& summary) {
  std::ostringstream out;
  std::string header;
  for (const auto* c : kCaseColumns) header += (header.empty() ? "" : ",") + std::string(c);
  for (const auto* c : kRoundColumns) header += "," + std::string(c);
  out << header << "\n";
  if (!summary.contains("cases")) return out.str();
  for (const auto& entry : summary["cases"]) {
    std::string case_cells;
    for (const auto* c : kCaseColumns) case_cells += (case_cells.empty() ? "" : ",") + cell(entry, c);
    if (!entry.contains("rounds")) continue;
    for (const auto& round : entry["rounds"]) {
      out << case_cells;
      for (const auto* c : kRoundColumns) out << "," << cell(round, c);
      out << "\n";
    }
  }
  return out.str();
}

}  // namespace xpuperf::report
