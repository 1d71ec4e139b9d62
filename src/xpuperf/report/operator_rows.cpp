#include "xpuperf/report/operator_rows.h"

#include <algorithm>
#include <map>

#include "xpuperf/core/strings.h"

namespace xpuperf::report {
using nlohmann::json;

std::string fraction_text(const std::optional<double>& fraction) {
  return fraction ? fixed_digits(100 * *fraction, 1) + " %" : "–";
}

std::string speedup_text(const OperatorRowStats& row) {
  if (row.speedup) return fixed_digits(*row.speedup, 2) + "×";
  return row.speedup_void.empty() ? "–" : row.speedup_void;
}

std::string shape_text(const json& shape) {
  std::string out;
  if (!shape.is_array()) return out;
  for (const auto& s : shape)
    out += (out.empty() ? "" : "×") + (s.is_number() ? std::to_string(s.get<long long>()) : "?");
  return out;
}

namespace {

std::string text_of(const json& row, const char* key) {
  return row.contains(key) && row[key].is_string() ? row[key].get<std::string>() : std::string();
}

double number_of(const json& row, const char* key) {
  return row.contains(key) && row[key].is_number() ? row[key].get<double>() : 0.0;
}

bool flag_of(const json& row, const char* key) {
  return row.contains(key) && row[key].is_boolean() && row[key].get<bool>();
}

// The shape column: the sizes, or a census call's arguments (and whether a backward made it).
std::string row_shape_text(const json& row) {
  if (row.contains("call") && row["call"].is_string())
    return row["call"].get<std::string>() + (flag_of(row, "backward") ? " (backward)" : "");
  return shape_text(row.contains("shape") ? row["shape"] : json());
}

std::string key_of(const json& row) {
  return text_of(row, "op") + " " + row_shape_text(row) + " " + text_of(row, "dtype") + " " +
         text_of(row, "implementation");
}

void finish(OperatorRowStats& s, const Roof& datasheet, const Roof& measured, const std::vector<double>& energies) {
  s.time = aggregate(s.median_ms);
  const double ms = s.time.mean;
  s.flops = number_of(s.last, "flops");
  s.bytes = number_of(s.last, "bytes");
  if (ms > 0) {
    s.tflops = s.flops / (ms * 1e-3) / 1e12;
    s.gb_per_s = s.bytes / (ms * 1e-3) / 1e9;
  }
  s.intensity = s.bytes > 0 ? s.flops / s.bytes : 0;
  if (const double factor = number_of(s.last, "bus_factor"); factor > 0) {  // a collective: its interconnect's
    s.bus_gb_per_s = s.gb_per_s * factor;
    s.datasheet_fraction = interconnect_fraction(datasheet, s.bus_gb_per_s);
    s.measured_fraction = interconnect_fraction(measured, s.bus_gb_per_s);
  } else {
    s.datasheet_fraction = roof_fraction(datasheet, s.dtype, s.flops, s.bytes, ms);
    s.measured_fraction = roof_fraction(measured, s.dtype, s.flops, s.bytes, ms);
  }
  if (!energies.empty()) {
    double sum = 0;
    for (const double e : energies) sum += e;
    s.energy_per_call_j = sum / static_cast<double>(energies.size());
  }
  s.checked = flag_of(s.last, "checked");
  s.accurate = flag_of(s.last, "accurate");
  s.deterministic = flag_of(s.last, "deterministic");
}

}  // namespace

std::vector<OperatorRowStats> operator_rows(const CaseResult& c, const Roof& measured) {
  std::vector<OperatorRowStats> rows;
  std::map<std::string, std::size_t> index;
  std::map<std::string, std::vector<double>> energies;
  Roof datasheet;
  for (const auto& r : c.rounds) {
    const json* list = r.ok() ? r.record("operators") : nullptr;
    if (!list || !list->is_array()) continue;
    if (const json* roof = r.record("datasheet_roof")) datasheet = Roof::from_json(*roof);
    for (const auto& row : *list) {
      if (!row.is_object() || number_of(row, "median_ms") <= 0) continue;
      const std::string key = key_of(row);
      auto [it, added] = index.emplace(key, rows.size());
      if (added) {
        OperatorRowStats s;
        s.key = key;
        s.op = text_of(row, "op");
        s.shape = row_shape_text(row);
        s.dtype = text_of(row, "dtype");
        s.implementation = text_of(row, "implementation");
        rows.push_back(s);
      }
      OperatorRowStats& s = rows[it->second];
      s.median_ms.push_back(number_of(row, "median_ms"));
      s.last = row;
      if (row.contains("energy_per_call_j") && row["energy_per_call_j"].is_number())
        energies[key].push_back(row["energy_per_call_j"].get<double>());
    }
  }
  for (auto& s : rows) finish(s, datasheet, measured, energies[s.key]);
  for (auto& s : rows) {
    if (s.implementation == "aten") continue;
    const auto aten = std::find_if(rows.begin(), rows.end(), [&s](const OperatorRowStats& a) {
      return a.implementation == "aten" && a.op == s.op && a.shape == s.shape && a.dtype == s.dtype;
    });
    if (aten == rows.end() || s.time.mean <= 0) continue;
    const bool wrong = s.checked && !s.accurate, aten_wrong = aten->checked && !aten->accurate;
    if (wrong || aten_wrong)
      s.speedup_void = std::string("void: ") + (wrong ? "this row" : "ATen's row") + " is inaccurate";
    else
      s.speedup = aten->time.mean / s.time.mean;
  }
  return rows;
}

}  // namespace xpuperf::report
