// `xpuperf op --census RUN` (the case `census`): a case's step explained by its operators.

#include <algorithm>
#include <sstream>

#include "xpuperf/core/files.h"
#include "xpuperf/core/strings.h"
#include "xpuperf/opbench/census_replay.h"
#include "xpuperf/opbench/op_case.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/vendor_runtime.h"

namespace xpuperf::opbench {
namespace {

// Every row, by time a step, largest first.
std::string rows_table(const std::vector<OperatorRow>& rows, const std::string& unit) {
  std::vector<const OperatorRow*> order;
  for (const auto& r : rows) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const OperatorRow* a, const OperatorRow* b) {
    return a->calls_per_step * a->median_ms > b->calls_per_step * b->median_ms;
  });
  std::ostringstream md;
  md << "| operator | call | dtype | calls a " << unit << " | median ms | p10 – p90 ms | n | warm ms | ms a " << unit
     << " | TFLOP/s | GB/s | pass |\n| --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- "
        "|\n";
  for (const OperatorRow* r : order)
    md << "| " << r->op << " | " << r->call << " | " << r->dtype << " | " << fixed_digits(r->calls_per_step, 2) << " | "
       << fixed_digits(r->median_ms, 4) << " | " << fixed_digits(r->p10_ms, 4) << " – " << fixed_digits(r->p90_ms, 4)
       << " | " << r->samples << (r->device_timed ? "" : " (host)") << " | "
       << (r->warm_ms ? fixed_digits(*r->warm_ms, 4) : std::string("–")) << " | "
       << fixed_digits(r->calls_per_step * r->median_ms, 3) << " | "
       << (r->flops_known ? fixed_digits(r->tflops, 2) : std::string("–")) << " | " << fixed_digits(r->gb_per_s, 1)
       << " | " << (r->backward ? "backward" : "forward") << " |\n";
  return md.str();
}

}  // namespace

int run_census_case(const OperatorRequest& request, std::ostream& out, std::ostream& err) {
  Census census;
  MeasureOptions options;
  std::size_t top = 10;
  bool warm = true;
  try {
    const std::string path = request.config.get_string("census", "");
    if (path.empty())
      throw ConfigError(request.config.origin() +
                        ": census is empty: name a run folder, a rank's log or a census file (xpuperf op --census "
                        "PATH, or --set census=PATH)");
    try {
      census = read_census(path);
    } catch (const std::runtime_error& e) {
      throw ConfigError(std::string("census: ") + e.what());
    }
    options = measure_options(request.config, request.smoke);
    const std::int64_t asked = request.config.get_int("top", 10);
    if (asked < 1) throw ConfigError(request.config.at("top").source.str() + ": top must be 1 or more");
    top = static_cast<std::size_t>(asked);
    warm = request.config.get_bool("warm", true);
    if (!request.shapes.empty() || !request.dtypes.empty())
      throw ConfigError("--shape and --dtype do not go with the census: its calls have their own");
  } catch (const std::exception& e) {
    err << "xpuperf: error: " << e.what() << "\n";
    return 2;
  }
  const torch::Device device = operator_device(request);
  std::vector<OperatorRow> rows;
  nlohmann::json failed = nlohmann::json::array();
  double host_calls = 0;
  for (const auto& call : census.calls) {
    const double per_step = static_cast<double>(call.calls) / census.units;
    if (!device.is_cpu() && !census_call_on_device(call)) {
      host_calls += per_step;
      continue;
    }
    try {
      OperatorRow row = replay_call(call, per_step, device, options);
      if (warm) {  // the same call again, its inputs left in the caches
        MeasureOptions warm_options = options;
        warm_options.flush_bytes = warm_options.rotate_bytes = 0;
        warm_options.graph_calls = 0;
        warm_options.record_kernels = false;
        row.warm_ms = replay_call(call, per_step, device, warm_options).median_ms;
      }
      place_on_roofs(row, request);
      rows.push_back(std::move(row));  // a row, or a failed one: never both
    } catch (const std::runtime_error& e) {
      err << "xpuperf: error: " << e.what() << "\n";
      failed.push_back({{"op", call.op},
                        {"call", torchrt::census_call_text(call)},
                        {"calls_per_step", per_step},
                        {"error", e.what()}});
    }
  }
  const Explanation explanation = explain(rows, census, top, host_calls);
  out << rows_table(rows, census.unit) << explanation_markdown(explanation, rows, census);
  if (!request.measured_roof.empty()) out << "\nmeasured roof: " << request.measured_roof.source << "\n";
  if (!failed.empty())
    out << "\n"
        << failed.size() << " call(s) did not replay; their " << fixed_digits(explanation.unreplayed_calls, 1)
        << " calls a " << census.unit << " are not in the sum (failed_rows)\n";
  const nlohmann::json explained = explanation.to_json(rows, census);
  log_operator_rows(out, request, device, rows, failed, {}, {{"explained", explained}});
  write_rows_json(request, device, rows, {{"failed_rows", failed}, {"explained", explained}});
  if (rows.empty()) return 1;
  return failed.empty() || request.inaccurate_ok ? 0 : 1;
}

}  // namespace xpuperf::opbench
