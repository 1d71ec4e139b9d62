#include "xpuperf/opbench/op_case.h"

#include <iomanip>
#include <sstream>

#include "xpuperf/core/files.h"
#include "xpuperf/core/repo.h"
#include "xpuperf/core/strings.h"
#include "xpuperf/opbench/op_measure.h"
#include "xpuperf/torchrt/device.h"

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
        "TFLOP/s | GB/s | FLOP/byte | max rel err | worst / tolerance | accurate | deterministic |\n"
        "| --- | --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | "
        "--- |\n";
  for (const auto& r : rows) {
    const double worst =
        std::max(r.error.worst_over_tolerance, r.has_gradients ? r.gradient_error.worst_over_tolerance : 0.0);
    md << "| " << r.op << " | " << shape_text(r.sizes) << " | " << r.dtype << " | " << r.implementation << " | "
       << fixed_digits(r.median_ms, 4) << " | " << fixed_digits(r.p10_ms, 4) << " – " << fixed_digits(r.p90_ms, 4)
       << " | " << fixed_digits(100 * r.cv, 1) << " % | " << r.samples << (r.device_timed ? "" : " (host)") << " | "
       << fixed_digits(r.host_ms, 4) << " | " << fixed_digits(r.cold_ms, 3) << " | " << fixed_digits(r.tflops, 3)
       << " | " << fixed_digits(r.gb_per_s, 1) << " | " << fixed_digits(r.intensity, 2) << " | "
       << (r.checked ? sci(r.error.max_rel) : "–") << " | " << (r.checked ? fixed_digits(worst, 2) : "–") << " | "
       << (!r.checked   ? "not checked"
           : r.accurate ? "yes"
                        : "NO")
       << (r.has_gradients ? " (with gradients)" : "") << " | " << (r.deterministic ? "yes" : "no") << " |\n";
  }
  return md.str();
}

MeasureOptions options_of(const Config& config, bool smoke) {
  MeasureOptions o;
  o.warmup = static_cast<int>(config.get_int("warmup", o.warmup));
  o.samples = static_cast<int>(config.get_int("samples", o.samples));
  o.min_seconds = config.get_number("min_seconds", o.min_seconds);
  o.check_accuracy = config.get_bool("check_accuracy", o.check_accuracy);
  o.rotate_bytes = config.get_number("rotate_mib", o.rotate_bytes / (1 << 20)) * (1 << 20);
  o.flush_bytes = config.get_number("flush_mib", o.flush_bytes / (1 << 20)) * (1 << 20);
  o.seed = static_cast<std::uint64_t>(config.get_int("seed", 1234));
  if (o.warmup < 0 || o.samples < 1 || o.rotate_bytes < 0 || o.flush_bytes < 0)
    throw ConfigError(config.origin() +
                      ": warmup must be 0 or more, samples 1 or more, rotate_mib and flush_mib "
                      "0 or more");
  if (smoke) {  // a check that each row runs and is accurate, in seconds: not a figure to quote
    o.warmup = std::min(o.warmup, 1);
    o.samples = std::min(o.samples, 5);
    o.min_seconds = 0;
    o.rotate_bytes = o.flush_bytes = 1 << 20;
  }
  return o;
}

}  // namespace

int run_operator_case(const OperatorRequest& request, std::ostream& out, std::ostream& err) {
  if (request.list) {
    if (!request.markdown)
      out << "Operators (cases/operation/<op>/config.yaml gives each its shapes and dtypes; `xpuperf op --case "
             "NAME`):\n\n";
    out << operator_table_markdown();
    return 0;
  }
  const OperatorSpec* spec = find_operator(request.name);
  std::vector<Shape> shapes;
  std::vector<torch::Dtype> dtypes;
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
    for (const auto& name : names) dtypes.push_back(parse_dtype(name));
    options = options_of(request.config, request.smoke);
  } catch (const std::exception& e) {
    err << "xpuperf: error: " << e.what() << "\n";
    return 2;
  }
  const torch::Device device = torchrt::choose_device(request.device, 0);
  std::vector<OperatorRow> rows;
  int status = 0;
  for (const auto& shape : shapes)
    for (const auto dtype : dtypes) {
      try {
        rows.push_back(measure_operator(*spec, shape, dtype, device, options));
        if (rows.back().checked && !rows.back().accurate) status = 1;
      } catch (const std::runtime_error& e) {
        err << "xpuperf: error: " << e.what() << "\n";
        status = 1;
      }
    }
  out << table(rows);
  if (!request.json_out.empty()) {
    nlohmann::json j = {{"operator", request.name}, {"device", device.str()}, {"rows", nlohmann::json::array()}};
    for (const auto& r : rows) j["rows"].push_back(r.to_json());
    write_json_file(request.json_out, j);
  }
  return status;
}

}  // namespace xpuperf::opbench
