#include "xpuperf/report/summary_csv.h"

#include <sstream>
#include <vector>

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
  const std::vector<const char*> round = round_columns();
  std::ostringstream out;
  std::string header;
  for (const auto* c : kCaseColumns) header += (header.empty() ? "" : ",") + std::string(c);
  for (const auto* c : round) header += "," + std::string(c);
  out << header << "\n";
  if (!summary.contains("cases")) return out.str();
  for (const auto& entry : summary["cases"]) {
    std::string case_cells;
    for (const auto* c : kCaseColumns) case_cells += (case_cells.empty() ? "" : ",") + cell(entry, c);
    if (!entry.contains("rounds")) continue;
    for (const auto& r : entry["rounds"]) {
      out << case_cells;
      for (const auto* c : round) out << "," << cell(r, c);
      out << "\n";
    }
  }
  return out.str();
}

}  // namespace xpuperf::report
