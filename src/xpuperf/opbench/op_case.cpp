#include "xpuperf/opbench/op_case.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <thread>

#include "xpuperf/core/files.h"
#include "xpuperf/core/host_memory.h"
#include "xpuperf/core/perflog.h"
#include "xpuperf/core/repo.h"
#include "xpuperf/core/strings.h"
#include "xpuperf/opbench/op_measure.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/vendor_runtime.h"

namespace xpuperf::opbench {
namespace {

using Shape = std::vector<std::int64_t>;

// The shapes of a config key: a list of lists of positive integers, each as long as the operator's.
std::vector<Shape> config_shapes(const Config& config, const std::string& key, const OperatorSpec& spec) {
  const ConfigEntry* e = config.find(key);
  if (!e)
    throw ConfigError(config.origin() + ": missing '" + key + "' (a list of shapes: [[" +
                      join_or_none(spec.size_names) + "], ...])");
  std::vector<Shape> shapes;
  if (!e->value.IsSequence()) throw ConfigError(e->source.str() + ": '" + key + "' must be a list of shapes");
  for (const auto& item : e->value) {
    if (!item.IsSequence()) throw ConfigError(e->source.str() + ": each of '" + key + "' must be a list of sizes");
    Shape shape;
    for (const auto& size : item) shape.push_back(size.as<std::int64_t>());
    shapes.push_back(shape);
  }
  return shapes;
}

void check_shape(const OperatorSpec& spec, const Shape& shape, const std::string& where) {
  std::string names;
  for (const auto& n : spec.size_names) names += (names.empty() ? "" : " × ") + n;
  if (shape.size() != spec.size_names.size())
    throw ConfigError(where + ": " + spec.name + " takes " + std::to_string(spec.size_names.size()) + " sizes (" +
                      names + "), got " + std::to_string(shape.size()));
  for (const auto size : shape)
    if (size < 1) throw ConfigError(where + ": " + spec.name + "'s sizes (" + names + ") must be positive");
  if (const std::string problem = spec.shape_problem(shape); !problem.empty())
    throw ConfigError(where + ": " + problem);
}

std::string sci(double v) {
  std::ostringstream out;
  out << std::setprecision(3) << v;
  return out.str();
}

std::string shape_text(const Shape& shape) {
  std::string out;
  for (const auto s : shape) out += (out.empty() ? "" : "×") + std::to_string(s);
  return out;
}

std::string table(const std::vector<OperatorRow>& rows) {
  std::ostringstream md;
  md << "| operator | shape | dtype | implementation | median ms | p10 – p90 ms | CV | n | host ms | cold ms | "
        "TFLOP/s | GB/s | FLOP/byte | of datasheet | of measured roof | vs aten | max rel err | worst / tolerance | "
        "accurate | deterministic |\n"
        "| --- | --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | "
        "---: | ---: | --- | --- |\n";
  for (const auto& r : rows) {
    const double worst =
        std::max(r.error.worst_over_tolerance, r.has_gradients ? r.gradient_error.worst_over_tolerance : 0.0);
    md << "| " << r.op << " | " << shape_text(r.sizes) << " | " << r.dtype << " | " << r.implementation << " | "
       << fixed_digits(r.median_ms, 4) << " | " << fixed_digits(r.p10_ms, 4) << " – " << fixed_digits(r.p90_ms, 4)
       << " | " << fixed_digits(100 * r.cv, 1) << " % | " << r.samples << (r.device_timed ? "" : " (host)") << " | "
       << fixed_digits(r.host_ms, 4) << " | " << fixed_digits(r.cold_ms, 3) << " | " << fixed_digits(r.tflops, 3)
       << " | " << fixed_digits(r.gb_per_s, 1) << " | " << fixed_digits(r.intensity, 2) << " | "
       << percent_text(r.datasheet_fraction) << " | " << percent_text(r.measured_fraction) << " | "
       << (r.speedup                ? fixed_digits(*r.speedup, 2) + "×"
           : r.speedup_void.empty() ? "–"
                                    : r.speedup_void)
       << " | " << (r.checked ? sci(r.error.max_rel) : "–") << " | " << (r.checked ? fixed_digits(worst, 2) : "–")
       << " | "
       << (!r.checked   ? "not checked"
           : r.accurate ? "yes"
                        : "NO")
       << (r.has_gradients ? " (with gradients)" : "") << " | " << (r.deterministic ? "yes" : "no") << " |\n";
  }
  return md.str();
}

}  // namespace

MeasureOptions measure_options(const Config& config, bool smoke) {
  MeasureOptions o;
  o.warmup = static_cast<int>(config.get_int("warmup", o.warmup));
  o.samples = static_cast<int>(config.get_int("samples", o.samples));
  o.min_seconds = config.get_number("min_seconds", o.min_seconds);
  o.check_accuracy = config.get_bool("check_accuracy", o.check_accuracy);
  o.rotate_bytes = config.get_number("rotate_mib", o.rotate_bytes / (1 << 20)) * (1 << 20);
  o.flush_bytes = config.get_number("flush_mib", o.flush_bytes / (1 << 20)) * (1 << 20);
  o.seed = static_cast<std::uint64_t>(config.get_int("seed", 1234));
  o.graph_calls = static_cast<int>(config.get_int("graph_calls", 0));
  const std::string values = config.get_string("input_values", "normal");
  if (values != "normal" && values != "levels")
    throw ConfigError(config.at("input_values").source.str() + ": input_values must be normal or levels, got '" +
                      values + "'");
  o.levels = values == "levels";
  if (o.warmup < 0 || o.samples < 1 || o.rotate_bytes < 0 || o.flush_bytes < 0 || o.graph_calls < 0)
    throw ConfigError(config.origin() +
                      ": warmup must be 0 or more, samples 1 or more, rotate_mib, flush_mib and graph_calls "
                      "0 or more");
  if (smoke) {  // a check that each row runs and is accurate, in seconds: not a figure to quote
    o.warmup = std::min(o.warmup, 1);
    o.samples = std::min(o.samples, 5);
    o.min_seconds = 0;
    o.rotate_bytes = o.flush_bytes = 1 << 20;
  }
  return o;
}

namespace {

// The implementations the config asks for (`implementations`; default ATen's and every alternative).
std::vector<std::string> implementations_of(const Config& config, const OperatorSpec& spec) {
  std::vector<std::string> known = {"aten"};
  for (const auto& a : spec.alternatives) known.push_back(a.name);
  if (!config.has("implementations")) return known;
  const std::vector<std::string> asked = config.get_string_list("implementations");
  for (const auto& name : asked)
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw ConfigError(config.at("implementations").source.str() + ": " + spec.name + " has no implementation '" +
                        name + "' (it has " + join_or_none(known) + ")");
  return asked;
}

// Each alternative row's speed-up over ATen's row of the same shape and dtype; void where a row is
// inaccurate.
void set_speedups(std::vector<OperatorRow>& rows, std::size_t first) {
  for (std::size_t i = first; i < rows.size(); ++i) {
    OperatorRow& r = rows[i];
    if (r.implementation == "aten") continue;
    const auto aten = std::find_if(rows.begin() + static_cast<std::ptrdiff_t>(first), rows.end(),
                                   [](const OperatorRow& a) { return a.implementation == "aten"; });
    if (aten == rows.end() || r.median_ms <= 0) continue;
    if ((r.checked && !r.accurate) || (aten->checked && !aten->accurate))
      r.speedup_void = "void: " + std::string(r.checked && !r.accurate ? "this row" : "ATen's row") + " is inaccurate";
    else
      r.speedup = aten->median_ms / r.median_ms;
  }
}

}  // namespace

torch::Device operator_device(const OperatorRequest& request) {
  const torch::Device device = torchrt::choose_device(request.device, 0);
  if (!device.is_cuda()) {  // as the training and inference cases run on the host
    torchrt::set_cpu_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    keep_freed_host_memory();
  }
  return device;
}

std::string percent_text(const std::optional<double>& fraction) {
  return fraction ? fixed_digits(100 * *fraction, 1) + " %" : "–";
}

void write_rows_json(const OperatorRequest& request, const torch::Device& device, const std::vector<OperatorRow>& rows,
                     const nlohmann::json& extra) {
  if (request.json_out.empty()) return;
  nlohmann::json j = {{"operator", request.name}, {"device", torchrt::device_text(device.str())}};
  if (extra.is_object()) j.update(extra);
  j["rows"] = nlohmann::json::array();
  for (const auto& r : rows) j["rows"].push_back(r.to_json());
  write_json_file(request.json_out, j);
}

void place_on_roofs(OperatorRow& row, const OperatorRequest& request) {
  row.datasheet_fraction = roof_fraction(request.datasheet_roof, row.dtype, row.flops, row.bytes, row.median_ms);
  row.measured_fraction = roof_fraction(request.measured_roof, row.dtype, row.flops, row.bytes, row.median_ms);
}

void log_operator_rows(std::ostream& out, const OperatorRequest& request, const torch::Device& device,
                       const std::vector<OperatorRow>& rows, const nlohmann::json& failed,
                       const std::vector<std::string>& not_measured, const nlohmann::json& extra) {
  nlohmann::json value = {{"operator", request.name},     {"device", torchrt::device_text(device.str())},
                          {"hardware", request.hardware}, {"rows", nlohmann::json::array()},
                          {"failed_rows", failed},        {"not_measured", not_measured}};
  if (extra.is_object()) value.update(extra);
  for (const auto& r : rows) value["rows"].push_back(r.to_json());
  if (!request.datasheet_roof.empty()) value["datasheet_roof"] = request.datasheet_roof.to_json();
  if (!request.measured_roof.empty()) value["measured_roof"] = request.measured_roof.to_json();
  PerfLogWriter(out, 0).log(perflog_event::kFinished, value, __FILE__, __LINE__);
}

int run_operator_case(const OperatorRequest& request, std::ostream& out, std::ostream& err) {
  if (request.list) {
    if (!request.markdown)
      out << "Operators (cases/operation/<op>/config.yaml gives each its shapes and dtypes; `xpuperf op --case "
             "NAME`):\n\n";
    out << operator_table_markdown();
    if (!request.markdown)
      out << "\nCollectives (over 2 ranks or more: `xpuperf op --case all_reduce --nproc 2`):\n\n"
          << collective_table_markdown();
    return 0;
  }
  if (request.name == kCensusCase) return run_census_case(request, out, err);
  if (is_collective_case(request.name)) return run_collective_case(request, out, err);
  const OperatorSpec* spec = find_operator(request.name);
  std::vector<Shape> shapes;
  std::vector<torch::Dtype> dtypes;
  std::vector<std::string> implementations;
  MeasureOptions options;
  try {
    if (!spec) {
      const std::string near = closest_match(request.name, operator_names());
      throw ConfigError("unknown operator '" + request.name + "'" +
                        (near.empty() ? "" : ": did you mean '" + near + "'?") + " (xpuperf op --list)");
    }
    shapes = !request.shapes.empty() ? request.shapes
                                     : config_shapes(request.config, request.smoke ? "smoke_shapes" : "shapes", *spec);
    for (const auto& shape : shapes)
      check_shape(*spec, shape, request.shapes.empty() ? request.config.origin() : "--shape");
    const std::vector<std::string> names =
        !request.dtypes.empty() ? request.dtypes : request.config.get_string_list("dtypes");
    for (const auto& name : names) {
      dtypes.push_back(parse_dtype(name));
      if (spec->integer == c10::isFloatingType(dtypes.back()))
        throw ConfigError(
            spec->name + " takes " +
            (spec->integer ? "integer dtypes (int32, int16)" : "floating dtypes (fp32, bf16, fp16, fp64)") + ", got " +
            name);
    }
    options = measure_options(request.config, request.smoke);
    implementations = implementations_of(request.config, *spec);
  } catch (const std::exception& e) {
    err << "xpuperf: error: " << e.what() << "\n";
    return 2;
  }
  const torch::Device device = operator_device(request);
  std::vector<OperatorRow> rows;
  nlohmann::json failed = nlohmann::json::array();
  std::vector<std::string> not_measured;
  std::vector<OperatorSpec> runs;  // a spec an implementation the device has
  for (const auto& name : implementations) {
    if (name == "aten") {
      runs.push_back(*spec);
      continue;
    }
    const auto& alt = *std::find_if(spec->alternatives.begin(), spec->alternatives.end(),
                                    [&name](const Implementation& a) { return a.name == name; });
    if (implementation_available(alt, device))
      runs.push_back(with_implementation(*spec, alt, device));
    else
      not_measured.push_back(name + ": no kernel of xpuperf::" + alt.kernel + " is registered for " +
                             torchrt::device_text(device.str()) +
                             " (the dispatcher would run the composite, ATen's operators again)");
  }
  int status = 0;
  for (const auto& shape : shapes)
    for (const auto dtype : dtypes) {
      const std::size_t first = rows.size();
      for (const auto& run : runs) try {
          rows.push_back(measure_operator(run, shape, dtype, device, options));
          place_on_roofs(rows.back(), request);
          if (rows.back().checked && !rows.back().accurate && !request.inaccurate_ok) status = 1;
        } catch (const std::runtime_error& e) {
          err << "xpuperf: error: " << e.what() << "\n";
          failed.push_back({{"shape", shape},
                            {"dtype", dtype_name(dtype)},
                            {"implementation", run.implementation},
                            {"error", e.what()}});
          status = 1;
        }
      set_speedups(rows, first);
    }
  out << table(rows);
  if (!request.measured_roof.empty()) out << "\nmeasured roof: " << request.measured_roof.source << "\n";
  for (const auto& note : not_measured) out << "not measured: " << note << "\n";
  for (const auto& r : rows)
    if (!r.kernels.empty())
      out << "kernels of " << r.op << " " << shape_text(r.sizes) << " " << r.dtype << " " << r.implementation << ": "
          << join_or_none(r.kernels) << "\n";
  for (const auto& r : rows)
    if (r.graph_ms || !r.graph_note.empty())
      out << "graph replay of " << r.op << " " << shape_text(r.sizes) << " " << r.dtype << " " << r.implementation
          << ": "
          << (r.graph_ms ? fixed_digits(*r.graph_ms, 4) + " ms a call (" + std::to_string(options.graph_calls) +
                               " calls a graph; " + fixed_digits(r.median_ms, 4) + " ms launched one by one)"
                         : r.graph_note)
          << "\n";
  for (const auto& r : rows)
    if (!r.check_problem.empty())
      out << "check of " << r.op << " " << shape_text(r.sizes) << " " << r.dtype << ": " << r.check_problem << "\n";
  log_operator_rows(out, request, device, rows, failed, not_measured);
  write_rows_json(request, device, rows);
  return status;
}

}  // namespace xpuperf::opbench
