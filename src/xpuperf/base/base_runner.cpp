#include "xpuperf/base/base_runner.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "xpuperf/base/base_benchmark.h"
#include "xpuperf/core/base_config.h"
#include "xpuperf/core/perflog.h"
#include "xpuperf/core/specs.h"

namespace xpuperf::base {

using nlohmann::json;

std::string resolve_backend(const std::string& backend, const std::string& metric, const VendorSpec& vendor) {
  if (backend != "auto") return backend;
  if (!vendor.declared) return vendor.vendor == "cpu" ? "cpu" : "cuda";
  if (vendor.device_type != "privateuse1") return vendor.device_type;
  const auto built = base_backends(metric);
  return std::find(built.begin(), built.end(), vendor.vendor) != built.end() ? vendor.vendor : "torch";
}

void add_datasheet(const Repo& repo, const std::string& vendor, const std::string& hardware, json& figures) {
  const YAML::Node chip = chip_specs(repo, vendor, hardware);
  if (!chip) return;
  for (auto& f : figures) {
    const double sheet = chip_figure(chip, f.value("datasheet", ""));
    if (sheet <= 0) continue;
    f["datasheet_value"] = sheet;
    f["ratio"] = f["value"].get<double>() / sheet;
  }
}

namespace {

std::string fixed(double v) {
  std::ostringstream s;
  if (v != 0 && (std::abs(v) >= 1e6 || std::abs(v) < 1e-2))
    s << std::setprecision(4) << v;
  else
    s << std::fixed << std::setprecision(v >= 100 ? 1 : 3) << v;
  return s.str();
}

void print_table(const json& value, std::ostream& out) {
  out << "\n"
      << value["base"].get<std::string>() << " (" << value["backend"].get<std::string>() << ", "
      << value["implementation"].get<std::string>() << ")\n\n"
      << "| figure | value | unit | datasheet | ratio |\n| --- | ---: | --- | ---: | ---: |\n";
  for (const auto& f : value["figures"]) {
    out << "| " << f["name"].get<std::string>() << " | " << fixed(f["value"].get<double>()) << " | "
        << f["unit"].get<std::string>() << " | "
        << (f.contains("datasheet_value") ? fixed(f["datasheet_value"].get<double>()) : "") << " | "
        << (f.contains("ratio") ? fixed(100 * f["ratio"].get<double>()) + " %" : "") << " |\n";
  }
  out << "\ncheck: " << value["check"].get<std::string>() << (value["correct"].get<bool>() ? "" : " — WRONG") << "\n";
}

}  // namespace

int run_base(const Repo& repo, const BaseRequest& request, std::ostream& out, std::ostream& err) {
  const double started = steady_seconds();
  Diagnostics diags;
  BaseConfigRequest config_request{
      request.metric, request.vendor, parse_set_overrides(request.sets, diags), {"command line", 0}};
  std::optional<Config> config;
  if (!diags.has_errors()) config = load_base_config(repo, config_request, diags);
  const bool lead = request.env.rank == 0;
  if (lead) err << diags.format(Severity::Warning);
  if (!config) return kBaseBadInput;

  const std::string backend = resolve_backend(request.backend, request.metric, request.vendor_spec);
  auto bench = make_base(request.metric, backend);
  if (!bench) {
    err << "xpuperf base: " << request.metric << " has no " << backend
        << " implementation in this build (built: " << join_or_none(base_backends(request.metric)) << ")\n";
    return kBaseCannotRun;
  }
  BaseContext ctx{request.metric, *config, request.device >= 0 ? request.device : request.env.local_rank, request.env};
  const std::string why_not = bench->filter(ctx);
  if (!why_not.empty()) {
    err << "xpuperf base: " << request.metric << " cannot run here (" << backend << "): " << why_not << "\n";
    return kBaseCannotRun;
  }
  BaseResult result;
  try {
    result = bench->run(ctx);
  } catch (const std::exception& e) {
    err << "xpuperf base: " << request.metric << " (" << backend << ") failed: " << e.what() << "\n";
    return kBaseBadInput;
  }
  if (!lead) return result.correct ? kBaseOk : kBaseWrong;

  json figures = json::array();
  for (const auto& f : result.figures)
    figures.push_back({{"name", f.name}, {"value", f.value}, {"unit", f.unit}, {"datasheet", f.datasheet}});
  add_datasheet(repo, request.vendor, request.hardware, figures);
  json value = {{"base", request.metric},
                {"backend", backend},
                {"vendor", request.vendor},
                {"hardware", request.hardware},
                {"implementation", result.implementation},
                {"figures", figures},
                {"correct", result.correct},
                {"check", result.check},
                {"world_size", request.env.world_size},
                {"started_unix", result.started_unix},
                {"ended_unix", result.ended_unix},
                {"e2e_time", steady_seconds() - started},
                {"details", result.details}};
  print_table(value, out);
  PerfLogWriter(out, request.env.rank).log(perflog_event::kFinished, value, __FILE__, __LINE__);
  out.flush();
  return result.correct ? kBaseOk : kBaseWrong;
}

}  // namespace xpuperf::base
