#include "xpuperf/launch/sweep.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include "xpuperf/core/files.h"
#include "xpuperf/core/perflog.h"
#include "xpuperf/core/strings.h"
#include "xpuperf/core/switch_spec.h"
#include "xpuperf/core/training_config.h"
#include "xpuperf/launch/run_plan.h"
#include "xpuperf/report/summary_model.h"
#include "xpuperf/report/sweep_report.h"

namespace xpuperf {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(trim(part));
  return parts;
}

// What one token of a strategy sets: a declared switch's token (core/switch_spec.h) or key=value;
// nullopt (with the reason in diags) when it cannot.
std::optional<std::vector<std::string>> token_sets(const std::string& token, const Source& where, Diagnostics& diags) {
  const int errors_before = diags.error_count();
  if (auto sets = switch_token_sets(token, where, diags)) return sets;
  if (diags.error_count() > errors_before) return std::nullopt;  // a switch's token, with a value it does not take
  if (token.find('=') != std::string::npos) return std::vector<std::string>{token};
  diags.error(where, "unknown strategy token '" + token + "'",
              "use " + switch_tokens_text() + " or key=value, joined by +");
  return std::nullopt;
}

std::string slug(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
  return s.substr(0, 60);
}

// What every row sets so that rows compare: the same steps, timed after the warm-up, the loss of
// every step recorded, no evaluation but the final one.
std::vector<std::string> measuring_sets(const SweepOptions& o) {
  return {"max_steps=" + std::to_string(o.warmup_steps + o.steps),
          "max_epochs=0",
          "max_samples_termination=0",
          "time_budget=0",
          "timing_skip_steps=" + std::to_string(o.warmup_steps),
          "record_loss_curve=true",
          "eval_interval_epochs=0",
          "eval_interval_steps=0"};
}

// Everything a row sets: the sweep's --set, the measuring settings, then the row's switches.
std::vector<std::string> row_sets(const SweepOptions& o, const SweepRow& row) {
  std::vector<std::string> sets = o.sets;
  const auto measuring = measuring_sets(o);
  sets.insert(sets.end(), measuring.begin(), measuring.end());
  sets.insert(sets.end(), row.sets.begin(), row.sets.end());
  return sets;
}

std::string plan_text(const SweepOptions& o, const CaseKey& key, const std::vector<std::string>& sets,
                      const std::string& log_dir) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "vendor" << YAML::Value << o.vendor;
  out << YAML::Key << "log_dir" << YAML::Value << log_dir;
  out << YAML::Key << "hosts" << YAML::Value << YAML::Flow << std::vector<std::string>{"localhost"};
  out << YAML::Key << "launcher" << YAML::Value << "local";
  if (o.master_port > 0) out << YAML::Key << "master_port" << YAML::Value << o.master_port;
  out << YAML::Key << "cases" << YAML::Value << YAML::BeginMap << YAML::Key << key.str() << YAML::Value
      << YAML::BeginMap << YAML::Key << "data_dir" << YAML::Value << o.data_dir;
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    out << YAML::Key << s.substr(0, eq) << YAML::Value << YAML::Load(s.substr(eq + 1));
  }
  out << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

// Rank 0's log of a round (in the folder of node 0, whatever its host).
std::string rank0_log(const fs::path& round_dir) {
  std::error_code ec;
  for (const auto& node : fs::directory_iterator(round_dir, ec))
    if (node.path().filename().string().find("noderank0") != std::string::npos)
      return (node.path() / "rank0.out.log").string();
  return "";
}

// One row's measurements from its run folder (summary.json and rank 0's FINISHED of each round).
json collect_row(const fs::path& run_dir, const CaseKey& key) {
  json rounds = json::array();
  // The row's rounds as its run's summary.json says (read through the result model).
  std::vector<report::Round> case_rounds;
  std::string unreadable;  // a summary.json there that does not read; none at all: the run wrote none
  std::error_code ec;
  if (fs::exists(run_dir / "summary.json", ec)) try {
      for (auto& c : report::read_summary_file((run_dir / "summary.json").string()).cases)
        if (c.key == key.str()) case_rounds = std::move(c.rounds);
    } catch (const report::SummaryError& e) {
      unreadable = e.what();
    }
  for (int k = 1; k <= key.repeat; ++k) {
    json r = {{"round", k}, {"status", "not run"}, {"reason", unreadable}};
    for (const auto& s : case_rounds)
      if (s.number == k) {
        r["status"] = s.status;
        r["reason"] = s.reason;
        if (const double* e = s.find("energy_per_sample_j")) r["energy_per_sample_j"] = *e;
        if (const double* m = s.find("mfu")) r["mfu"] = *m;
      }
    if (const auto f = finished_in(rank0_log(run_dir / key.dir_name() / ("round" + std::to_string(k))))) {
      const json& extra = f->extra;
      const double all = f->training_samples_per_second.value_or(0.0);
      const double steady = extra.value("steady_samples_per_second", all);
      r["samples_per_second"] = steady;
      if (const double tokens = extra.value("tokens_per_sample", 0.0); tokens > 0)
        r["tokens_per_second"] = steady * tokens;
      if (r.contains("mfu") && all > 0) r["mfu"] = r["mfu"].get<double>() * steady / all;  // over the timed steps
      if (extra.contains("peak_device_memory_mib")) r["peak_device_memory_mib"] = extra["peak_device_memory_mib"];
      if (extra.contains("loss_curve")) r["loss_curve"] = extra["loss_curve"];
    } else if (r["status"] == "ok") {
      r["status"] = "failed";
      r["reason"] = "no FINISHED event in rank 0's log";
    }
    rounds.push_back(r);
  }
  return rounds;
}

std::string first_reason(const json& rounds) {
  for (const auto& r : rounds)
    if (r["status"] != "ok") return r.value("reason", "").empty() ? r.value("status", "") : r.value("reason", "");
  return "";
}

}  // namespace

std::vector<SweepRow> parse_strategies(const std::string& text, Diagnostics& diags) {
  std::vector<SweepRow> rows;
  for (const auto& strategy : split(text, ';')) {
    if (strategy.empty()) continue;
    const Source where{"--strategies '" + strategy + "'", 0};
    SweepRow row{strategy, {}};
    bool ok = true;
    const auto parts = split(strategy, '+');
    if (strategy.front() == '+' || strategy.back() == '+' ||
        std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); })) {
      diags.error(where, "a '+' with no switch on one side", "join switches as bf16+zero1");
      ok = false;
    }
    std::map<std::string, std::string> set_by;  // key -> the token that set it
    for (const auto& token : parts) {
      if (token.empty()) continue;
      auto sets = token_sets(token, where, diags);
      if (!sets) {
        ok = false;
        continue;
      }
      for (const auto& set : *sets) {
        const std::string key = trim(set.substr(0, set.find('=')));
        const auto [it, fresh] = set_by.emplace(key, token);
        if (!fresh) {
          diags.error(where, "'" + it->second + "' and '" + token + "' both set " + key,
                      "give each switch once in a strategy");
          ok = false;
        }
      }
      row.sets.insert(row.sets.end(), sets->begin(), sets->end());
    }
    for (const auto& r : rows)
      if (r.name == strategy) diags.error(where, "strategy '" + strategy + "' is listed twice");
    if (ok) rows.push_back(row);
  }
  if (rows.empty() && !diags.has_errors())
    diags.error({"--strategies", 0}, "no strategy given", "e.g. --strategies \"fp32; bf16; bf16+zero1\"");
  return rows;
}

namespace {

// The sweep's case from --model and --hardware (one host: HWx1xPROCS); nothing, with the error in
// `diags`, where they do not make one.
std::optional<CaseKey> sweep_case(const SweepOptions& o, Diagnostics& diags) {
  static const std::regex kHardware("(.+)x([0-9]+)x([0-9]+)");
  std::smatch m;
  if (o.hardware.size() > 128 || !std::regex_match(o.hardware, m, kHardware) || m[2].length() > 6 ||
      m[3].length() > 6) {
    diags.error({"--hardware", 0}, "'" + printable(o.hardware) + "' is not HWxNODESxPROCS", "e.g. --hardware H200x1x2");
    return std::nullopt;
  }
  if (std::stoi(m[2]) != 1) {
    diags.error({"--hardware", 0}, "a sweep runs on this host: give " + std::string(m[1]) + "x1x" + std::string(m[3]));
    return std::nullopt;
  }
  return parse_case_key(o.model + ":" + o.framework + ":" + std::string(m[1]) + ":1:" + std::string(m[3]) + ":" +
                            std::to_string(o.repeats),
                        {"command line", 0}, diags);
}

// The diagnostics but the "not a mutable parameter" warnings of the keys the sweep sets itself
// (measuring_sets: the steps, timing and evaluation), which would repeat for every row; the header
// line says it once instead.
void print_sweep_diagnostics(const SweepOptions& o, const Diagnostics& diags) {
  const auto measuring_keys = measuring_sets(o);
  for (const auto& d : diags.items()) {
    if (d.severity == Severity::Info) continue;
    bool measuring = false;
    for (const auto& set : measuring_keys)
      if (d.severity == Severity::Warning &&
          d.message.rfind("'" + set.substr(0, set.find('=')) + "' is not a mutable parameter", 0) == 0)
        measuring = true;
    if (!measuring) std::cerr << format_diagnostic(d) << "\n";
  }
}

// Checks the options and every row's merged config before anything runs: a combination that
// cannot work stops the sweep. The case and the rows; nothing where something is wrong (said).
std::optional<std::pair<CaseKey, std::vector<SweepRow>>> check_sweep(const Repo& repo, const SweepOptions& o) {
  Diagnostics diags;
  const std::optional<CaseKey> key = sweep_case(o, diags);
  if (o.steps < 1 || o.warmup_steps < 0 || o.repeats < 1)
    diags.error({"command line", 0}, "--steps and --repeats must be at least 1, --warmup-steps at least 0");
  auto rows = parse_strategies(o.strategies, diags);
  if (key && !diags.has_errors()) {
    for (const auto& row : rows) {
      TrainingConfigRequest request;
      request.key = *key;
      request.vendor = o.vendor;
      request.data_dir = o.data_dir;
      request.where = {"strategy '" + row.name + "'", 0};
      request.sets = parse_set_overrides(row_sets(o, row), diags, request.where);
      load_training_config(repo, request, diags);
    }
  }
  print_sweep_diagnostics(o, diags);
  if (diags.has_errors() || !key) return std::nullopt;
  if (o.data_dir.empty() || !fs::is_directory(o.data_dir)) {
    std::cerr << "xpuperf: error: data folder '" << o.data_dir << "' does not exist (give --data-dir)\n";
    return std::nullopt;
  }
  return std::make_pair(*key, std::move(rows));
}

// One row: its plan under row_dir, run as `xpuperf run` runs one, and its rounds collected into
// `entry`. Whether the run was interrupted (Ctrl-C).
bool run_row(const Repo& repo, const SweepOptions& o, const CaseKey& key, const SweepRow& row, const fs::path& row_dir,
             json& entry) {
  fs::create_directories(row_dir);
  const std::string plan_path = (row_dir / "sweep_plan.yaml").string();
  std::ofstream(plan_path) << plan_text(o, key, row_sets(o, row), row_dir.string());
  RunOptions run;
  run.plan_path = plan_path;
  run.xpuperf = o.xpuperf;
  const int code = run_plan(repo, run);
  fs::path run_dir;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(row_dir, ec))
    if (d.is_directory() && d.path().filename().string().rfind("run", 0) == 0) run_dir = d.path();
  entry["run_dir"] = run_dir.string();
  entry["rounds"] = run_dir.empty() ? json::array() : collect_row(run_dir, key);
  bool any_ok = false;
  for (const auto& r : entry["rounds"]) any_ok = any_ok || r["status"] == "ok";
  if (!any_ok) {
    entry["status"] = "failed";
    entry["reason"] =
        run_dir.empty() ? "the run did not start (exit " + std::to_string(code) + ")" : first_reason(entry["rounds"]);
  }
  return code == 130;
}

// The sweep's table (summary.json, summary.md, report.html in sweep_dir, the Markdown printed). The
// exit status: 1 when a row failed or lost the loss parity.
int write_sweep_summary(const fs::path& sweep_dir, const json& input, bool interrupted) {
  const json summary = report::sweep_summary(input);
  const std::string markdown = report::sweep_markdown(summary);
  std::ofstream(sweep_dir / "summary.json") << summary.dump(2) << "\n";
  std::ofstream(sweep_dir / "summary.md") << markdown;
  std::ofstream(sweep_dir / "report.html") << report::sweep_html(summary);
  std::cout << "\n"
            << markdown << "\nWritten: " << display_path((sweep_dir / "summary.md").string())
            << ", summary.json, report.html\n";
  if (interrupted) return 130;
  for (const auto& row : summary["rows"]) {
    if (row.value("status", "") != "ok") return 1;
    if (row.contains("parity") && !row["parity"]["within"].get<bool>()) return 1;
  }
  return 0;
}

}  // namespace

int run_sweep(const Repo& repo, const SweepOptions& o) {
  const auto checked = check_sweep(repo, o);
  if (!checked) return 2;
  const auto& [key, rows] = *checked;
  fs::path sweep_dir;
  try {
    sweep_dir = create_unique_folder(fs::absolute(o.log_dir).lexically_normal().string(), "sweep" + local_time_stamp());
  } catch (const FileError& e) {
    std::cerr << "xpuperf: error: " << e.what() << "\n";
    return 2;
  }
  fs::create_directories(sweep_dir / "rows");
  std::cout << "Sweep of " << key.model << " on " << o.vendor << " " << o.hardware << ": " << rows.size()
            << " strategies × " << o.repeats << " repeat(s) of " << o.warmup_steps << " + " << o.steps
            << " steps, into " << display_path(sweep_dir.string())
            << " (the sweep sets the steps and evaluation: not the standard case's run)\n";
  json input = {{"case", key.model + ":" + key.framework},
                {"vendor", o.vendor},
                {"hardware", o.hardware},
                {"world_size", key.world_size()},
                {"steps", o.steps},
                {"warmup_steps", o.warmup_steps},
                {"repeats", o.repeats},
                {"loss_tolerance", o.loss_tolerance},
                {"data_dir", o.data_dir},
                {"rows", json::array()}};
  bool interrupted = false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    json entry = {{"name", rows[i].name}, {"sets", rows[i].sets}, {"status", "ok"}, {"reason", ""}};
    if (interrupted) {
      entry["status"] = "not run";
      entry["reason"] = "the sweep was interrupted";
    } else {
      std::cout << "\n=== " << (i + 1) << "/" << rows.size() << ": " << rows[i].name << " ===\n" << std::flush;
      interrupted = run_row(repo, o, key, rows[i],
                            sweep_dir / "rows" / (std::to_string(i + 1) + "-" + slug(rows[i].name)), entry);
    }
    input["rows"].push_back(entry);
  }
  return write_sweep_summary(sweep_dir, input, interrupted);
}

}  // namespace xpuperf
