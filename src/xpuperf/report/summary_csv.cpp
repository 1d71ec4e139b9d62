#include "xpuperf/report/summary_csv.h"

#include <sstream>
#include <type_traits>
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

}  // namespace xpuperf::report
