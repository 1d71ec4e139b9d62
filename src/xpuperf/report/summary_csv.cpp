#include "xpuperf/report/summary_csv.h"

#include <sstream>
#include <type_traits>
#include <vector>

#include "xpuperf/report/measured_roof.h"
#include "xpuperf/report/operator_rows.h"
#include "xpuperf/report/summary.h"

namespace xpuperf::report {
namespace {
using nlohmann::json;

// The case's columns, then the round's: its place and status, every figure the statistics are
// taken over (aggregated_figures, so a new figure is a new column), the figures beside them, why it failed.
const std::vector<const char*> kCaseColumns = {"case", "family", "hardware", "nnodes", "nproc"};

std::vector<const char*> round_columns() {
  std::vector<const char*> columns = {"round", "status", "converged", "global_steps", "num_trained_samples"};
  const auto& figures = aggregated_figures();
  columns.insert(columns.end(), figures.begin(), figures.end());
  for (const char* c : {"steps_to_target", "final_metric_name", "final_metric_target", "unit", "reason"})
    columns.push_back(c);
  return columns;
}

// A field as RFC 4180 writes it: quoted when it holds a comma, a quote or a line break.
std::string field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string number_cell(const json& number) {
  return number.dump();  // the shortest text that reads back as the same number
}

template <typename T>
std::string optional_cell(const std::optional<T>& value) {
  if (!value) return "";
  if constexpr (std::is_same_v<T, bool>)
    return *value ? "true" : "false";
  else if constexpr (std::is_same_v<T, std::string>)
    return field(*value);
  else
    return number_cell(*value);
}

std::string case_cell(const CaseResult& c, const std::string& column) {
  if (column == "case") return field(c.key);
  if (!c.family) return "";  // a FlagPerf tree's case: its folder's name alone
  if (column == "family") return family_text(*c.family);
  if (column == "hardware") return field(c.hardware);
  if (column == "nnodes") return std::to_string(c.nnodes);
  return std::to_string(c.nproc);
}

std::string round_cell(const Round& r, const std::string& column) {
  if (const double* figure = r.find(column)) return number_cell(*figure);
  if (column == "round") return std::to_string(r.number);
  if (column == "status") return field(r.status);
  if (column == "reason") return field(r.reason);
  if (column == "converged") return optional_cell(r.converged);
  if (column == "global_steps") return optional_cell(r.global_steps);
  if (column == "num_trained_samples") return optional_cell(r.num_trained_samples);
  if (column == "steps_to_target") return optional_cell(r.steps_to_target);
  if (column == "final_metric_name") return optional_cell(r.final_metric_name);
  if (column == "final_metric_target") return optional_cell(r.final_metric_target);
  if (column == "unit") return optional_cell(r.unit);
  return "";  // a figure this round did not measure
}

}  // namespace

std::string summary_csv(const Summary& summary) {
  const std::vector<const char*> round = round_columns();
  std::ostringstream out;
  std::string header;
  for (const auto* c : kCaseColumns) header += (header.empty() ? "" : ",") + std::string(c);
  for (const auto* c : round) header += "," + std::string(c);
  out << header << "\n";
  for (const auto& entry : summary.cases) {
    std::string case_cells;
    for (const auto* c : kCaseColumns) case_cells += (case_cells.empty() ? "" : ",") + case_cell(entry, c);
    for (const auto& r : entry.rounds) {
      out << case_cells;
      for (const auto* c : round) out << "," << round_cell(r, c);
      out << "\n";
    }
  }
  return out.str();
}

namespace {

// operators.csv's columns after the case and round: the row's fields as op_measure.h writes them,
// its fractions of the roofs and its energy per call.
const std::vector<const char*> kOperatorColumns = {"op",
                                                   "shape",
                                                   "dtype",
                                                   "implementation",
                                                   "median_ms",
                                                   "p10_ms",
                                                   "p90_ms",
                                                   "cv",
                                                   "samples",
                                                   "device_timed",
                                                   "host_ms",
                                                   "cold_ms",
                                                   "flops",
                                                   "bytes",
                                                   "tflops",
                                                   "gb_per_s",
                                                   "intensity",
                                                   "datasheet_fraction",
                                                   "measured_fraction",
                                                   "energy_per_call_j",
                                                   "max_abs_error",
                                                   "max_rel_error",
                                                   "worst_over_tolerance",
                                                   "checked",
                                                   "accurate",
                                                   "deterministic",
                                                   "ranks",
                                                   "bus_gb_per_s",
                                                   "algorithm"};

std::string operator_cell(const json& row, const std::string& column, const std::optional<double>& measured) {
  if (column == "shape") return shape_text(row.value("shape", json()));
  if (column == "measured_fraction") return optional_cell(measured);
  if (column == "max_abs_error" || column == "max_rel_error" || column == "worst_over_tolerance") {
    if (!row.value("checked", false) || !row.contains("error")) return "";
    const std::string key = column == "max_abs_error" ? "max_abs" : column == "max_rel_error" ? "max_rel" : column;
    double worst = row["error"].value(key, 0.0);
    if (row.contains("gradient_error")) worst = std::max(worst, row["gradient_error"].value(key, 0.0));
    return number_cell(worst);
  }
  if (!row.contains(column) || row[column].is_null()) return "";
  const json& v = row[column];
  if (v.is_string()) return field(v.get<std::string>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return number_cell(v);
}

}  // namespace

std::string operators_csv(const Summary& summary) {
  std::ostringstream out;
  out << "case,round";
  for (const auto* c : kOperatorColumns) out << "," << c;
  out << "\n";
  for (const auto& entry : summary.cases) {
    if (!entry.is(CaseFamilyKind::Operation)) continue;
    const Roof measured = measured_roof(summary, entry.hardware);
    for (const auto& r : entry.rounds) {
      const json* rows = r.record("operators");
      if (!rows || !rows->is_array()) continue;
      for (const auto& row : *rows) {
        if (!row.is_object()) continue;
        const auto fraction = roof_fraction(measured, row.value("dtype", ""), row.value("flops", 0.0),
                                            row.value("bytes", 0.0), row.value("median_ms", 0.0));
        out << field(entry.key) << "," << r.number;
        for (const auto* c : kOperatorColumns) out << "," << operator_cell(row, c, fraction);
        out << "\n";
      }
    }
  }
  return out.str();
}

}  // namespace xpuperf::report
