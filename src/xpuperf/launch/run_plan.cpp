#include "xpuperf/launch/run_plan.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "xpuperf/core/case_family.h"
#include "xpuperf/core/files.h"
#include "xpuperf/core/log.h"
#include "xpuperf/core/perflog.h"
#include "xpuperf/core/shell_quote.h"
#include "xpuperf/core/specs.h"
#include "xpuperf/core/strings.h"
#include "xpuperf/core/version.h"
#include "xpuperf/launch/launcher.h"
#include "xpuperf/launch/node_agent.h"
#include "xpuperf/monitor/analysis.h"
#include "xpuperf/report/history.h"
#include "xpuperf/report/summary.h"
#include "xpuperf/report/summary_writers.h"

namespace xpuperf {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::atomic<int> g_stop{0};
void on_stop(int sig) {
  g_stop = sig;
}

struct RoundRow {
  std::string case_key;
  int round = 0;
  std::string status;
  std::string reason;
  std::optional<FinishedInfo> finished;
  std::string dir;
  bool skipped = false;
  double energy_j = 0;        // from the monitors (0: no power measured)
  double peak_mem_bytes = 0;  // device memory when there are accelerators, else host memory
};

std::vector<std::string> tail_lines(const std::string& path, std::size_t n) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > n) lines.erase(lines.begin());
  }
  return lines;
}

// The plan's settings, every default written out.
void emit_plan_settings(YAML::Emitter& out, const Plan& p) {
  out << YAML::Key << "vendor" << YAML::Value << p.vendor;
  out << YAML::Key << "log_dir" << YAML::Value << p.log_dir;
  out << YAML::Key << "log_level" << YAML::Value << p.log_level;
  out << YAML::Key << "hosts" << YAML::Value << YAML::Flow << p.hosts;
  out << YAML::Key << "ssh" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "port" << YAML::Value << p.ssh.port;
  out << YAML::Key << "user" << YAML::Value << p.ssh.user;
  out << YAML::Key << "known_hosts" << YAML::Value << p.ssh.known_hosts;
  out << YAML::Key << "identity_file" << YAML::Value << p.ssh.identity_file;
  out << YAML::Key << "connect_timeout" << YAML::Value << p.ssh.connect_timeout_s;
  out << YAML::EndMap;
  out << YAML::Key << "launcher" << YAML::Value << p.launcher;
  out << YAML::Key << "slurm_partition" << YAML::Value << p.slurm_partition;
  if (p.master_port > 0) out << YAML::Key << "master_port" << YAML::Value << p.master_port;
  out << YAML::Key << "visible_devices_env" << YAML::Value << p.visible_devices_env;
  out << YAML::Key << "shm_size" << YAML::Value << p.shm_size;
  out << YAML::Key << "clear_caches" << YAML::Value << p.clear_caches;
  out << YAML::Key << "case_time_limit" << YAML::Value << p.case_time_limit_s;
  out << YAML::Key << "monitor_period" << YAML::Value << p.monitor_period_s;
  out << YAML::Key << "history_db" << YAML::Value << p.history_db;
  out << YAML::Key << "deploy_path" << YAML::Value << p.deploy_path;
  if (p.container.enabled()) {  // engine none has no settings (the reader warns about any)
    out << YAML::Key << "container" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "engine" << YAML::Value << p.container.engine;
    out << YAML::Key << "image" << YAML::Value << p.container.image;
    out << YAML::Key << "build" << YAML::Value << p.container.build;
    out << YAML::Key << "run_options" << YAML::Value << YAML::Flow << p.container.run_options;
    out << YAML::Key << "mounts" << YAML::Value << YAML::Flow << p.container.mounts;
    out << YAML::Key << "env" << YAML::Value << YAML::BeginMap;
    for (const auto& [name, value] : p.container.env) out << YAML::Key << name << YAML::Value << value;
    out << YAML::EndMap;
    out << YAML::Key << "privileged" << YAML::Value << p.container.privileged;
    out << YAML::EndMap;
  }
}

// The plan's cases, by family: base, operation, training (`cases`), inference.
void emit_plan_cases(YAML::Emitter& out, const Plan& p) {
  const auto in_family = [](const PlanCase& c, const char* name) {
    return case_family(c.key).name() == std::string(name);
  };
  const auto count = [&](const char* family) {
    return std::count_if(p.cases.begin(), p.cases.end(), [&](const PlanCase& c) { return in_family(c, family); });
  };
  const auto keyed_section = [&](const char* name, const char* family) {
    if (count(family) == 0) return;
    out << YAML::Key << name << YAML::Value << YAML::BeginMap;
    for (const auto& c : p.cases) {
      if (!in_family(c, family)) continue;
      out << YAML::Key << YAML::DoubleQuoted << case_family(c.key).key_text(c.key) << YAML::Value;
      if (c.sets.empty()) {
        out << YAML::Null;
        continue;
      }
      out << YAML::BeginMap;
      for (const auto& set : c.sets) {
        const auto eq = set.find('=');
        out << YAML::Key << set.substr(0, eq) << YAML::Value << YAML::Flow << YAML::Load(set.substr(eq + 1));
      }
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  };
  keyed_section("base", "base");
  keyed_section("operation", "operation");
  if (count("training") > 0) {
    out << YAML::Key << "cases" << YAML::Value << YAML::BeginMap;
    for (const auto& c : p.cases) {
      if (!in_family(c, "training")) continue;
      out << YAML::Key << YAML::DoubleQuoted << c.key.str() << YAML::Value;
      if (c.sets.empty()) {
        out << c.data_dir;
        continue;
      }
      out << YAML::BeginMap << YAML::Key << "data_dir" << YAML::Value << c.data_dir;
      for (const auto& set : c.sets) {
        const auto eq = set.find('=');
        out << YAML::Key << set.substr(0, eq) << YAML::Value << YAML::Flow << YAML::Load(set.substr(eq + 1));
      }
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  keyed_section("inference", "inference");
}

// The plan as run, with every default written out, so `--resume` and readers see exactly it.
std::string plan_as_run(const Plan& p) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  emit_plan_settings(out, p);
  emit_plan_cases(out, p);
  out << YAML::EndMap;
  return std::string("# the plan as run by xpuperf ") + kVersion + " (git " + kGitHash +
         "), every default written out\n" + out.c_str() + "\n";
}

// A case as the plan writes it ("computation-BF16:H200:1:1:3", "mm:H200:3"), for what a person reads.
std::string shown_key(const PlanCase& c) {
  return case_family(c.key).key_text(c.key);
}

// An inference case's headline, as "inference_core 77410.7 items/s, accuracy 0.8700".
std::string inference_headline(const FinishedInfo& f) {
  const json& e = f.extra;
  std::string text;
  for (const char* key : {"inference_core", "validation_core"})
    if (e.contains(key) && e[key].is_number()) {
      text = std::string(key) + " " + fixed_digits(e[key].get<double>(), 1) + " items/s";
      const char* accuracy = std::string(key) == "inference_core" ? "inference_accuracy" : "validation_accuracy";
      if (e.contains(accuracy) && e[accuracy].is_number())
        text += ", accuracy " + fixed_digits(e[accuracy].get<double>(), 4);
      break;
    }
  return text;
}

// A base case's first figure, as "median 771.2 TFLOP/s (78.0 % of datasheet)".
std::string base_headline(const FinishedInfo& f) {
  const json& figures = f.extra["figures"];
  if (!figures.is_array() || figures.empty()) return "";
  const json& h = figures[0];
  std::string text = h.value("name", "") + " " + fixed_digits(h.value("value", 0.0), 3) + " " + h.value("unit", "");
  if (h.contains("ratio")) text += " (" + fixed_digits(100 * h["ratio"].get<double>(), 1) + " % of datasheet)";
  if (!f.extra.value("correct", true)) text += ", WRONG results";
  return text;
}

// An operator case's rows, as "4 rows, 3 accurate, 1 inaccurate, 1 did not run".
std::string operator_headline(const FinishedInfo& f) {
  const json& rows = f.extra["rows"];
  int all = 0, accurate = 0, inaccurate = 0;
  for (const auto& r : rows.is_array() ? rows : json::array()) {
    ++all;
    if (!r.value("checked", false)) continue;
    ++(r.value("accurate", false) ? accurate : inaccurate);
  }
  std::string text = std::to_string(all) + " row" + (all == 1 ? "" : "s");
  if (const json& e = f.extra.contains("explained") ? f.extra["explained"] : json(); e.is_object()) {
    // A census case replays a step's calls: what it explains, not accuracy (its rows are not checked).
    text = std::to_string(all) + " calls replayed";
    if (e.contains("explained_share") && e["explained_share"].is_number())
      text += ", " + fixed_digits(100 * e["explained_share"].get<double>(), 1) + " % of the " +
              e.value("unit", std::string("step")) + " explained";
  } else {
    text += ", " + std::to_string(accurate) + " accurate";
  }
  if (inaccurate > 0) text += ", " + std::to_string(inaccurate) + " inaccurate";
  const json& failed = f.extra.contains("failed_rows") ? f.extra["failed_rows"] : json::array();
  if (failed.is_array() && !failed.empty()) text += ", " + std::to_string(failed.size()) + " did not run";
  return text;
}

// The headline of a base, inference or operator case's round; "" for a training round.
std::string family_headline(const FinishedInfo& f) {
  if (f.extra.contains("steps")) return inference_headline(f);
  if (f.extra.contains("figures")) return base_headline(f);
  if (f.extra.contains("operator") && f.extra.contains("rows")) return operator_headline(f);
  return "";
}

void print_table(const std::vector<RoundRow>& rows) {
  std::cout << "\n| case | round | status | samples/s | converged | final metric | e2e (s) | energy (J) | peak memory "
               "(GiB) | logs |\n"
            << "| --- | ---: | --- | ---: | --- | --- | ---: | ---: | ---: | --- |\n";
  for (const auto& r : rows) {
    std::string sps = "", converged = "", metric = "", e2e = "";
    if (r.finished && !family_headline(*r.finished).empty()) {
      metric = family_headline(*r.finished);
      if (r.finished->e2e_time) e2e = fixed_digits(*r.finished->e2e_time, 1);
    } else if (r.finished) {
      const FinishedInfo& f = *r.finished;
      if (f.training_samples_per_second) sps = fixed_digits(*f.training_samples_per_second, 1);
      if (f.converged) converged = *f.converged ? "yes" : "no";
      if (f.final_metric) {
        metric = f.final_metric->name + " " + fixed_digits(f.final_metric->value, 4);
        if (f.final_metric->target) metric += " (target " + fixed_digits(*f.final_metric->target, 4) + ")";
      }
      if (f.e2e_time) e2e = fixed_digits(*f.e2e_time, 1);
    }
    std::cout << "| " << r.case_key << " | " << r.round << " | " << r.status << (r.skipped ? " (earlier run)" : "")
              << " | " << sps << " | " << converged << " | " << metric << " | " << e2e << " | "
              << (r.energy_j > 0 ? fixed_digits(r.energy_j, 1) : "") << " | "
              << (r.peak_mem_bytes > 0 ? fixed_digits(r.peak_mem_bytes / (1024.0 * 1024 * 1024), 2) : "") << " | "
              << display_path(r.dir) << " |\n";
  }
}

// Where xpuperf is on the nodes: this binary and content folder, or the same layout under the
// plan's deploy_path.
Deployment deployment_of(const Plan& plan, const Repo& repo, const std::string& binary) {
  const fs::path root = fs::absolute(repo.root().empty() ? "." : repo.root()).lexically_normal();
  if (plan.deploy_path.empty()) return {binary, root.string()};
  const fs::path relative = fs::path(binary).lexically_relative(root);
  const bool inside = !relative.empty() && *relative.begin() != "..";
  return {(fs::path(plan.deploy_path) / (inside ? relative : fs::path("build/src/xpuperf"))).string(),
          plan.deploy_path};
}

// The figures FlagPerf's inference framework takes from the vendor's datasheet: total memory and fp32/fp16 peaks of the
// chip (vendors/<v>/specs.yaml, chips.<hardware>); empty when the vendor does not list the chip.
json chip_peaks(const Repo& repo, const std::string& vendor, const std::string& hardware) {
  const YAML::Node chip = chip_specs(repo, vendor, hardware);
  json out = json::object();
  if (!chip) return out;
  if (chip["name"]) out["chip"] = chip["name"].as<std::string>("");
  for (const char* precision : {"fp32", "tf32", "bf16", "fp16"})
    if (const double peak = chip_figure(chip, std::string("peak_tflops.") + precision); peak > 0)
      out[std::string(precision) + "_peak_tflops"] = peak;
  if (const double gib = chip_figure(chip, "memory_gib"); gib > 0)
    out["datasheet_memory_bytes"] = gib * 1024.0 * 1024 * 1024;
  return out;
}

// Round `round` of case `c` on the plan's first nnodes hosts (Slurm picks its own nodes: the
// plan's hosts may be fewer than nnodes there).
RoundSpec round_spec(const Plan& plan, const PlanCase& c, int round, const std::string& round_dir) {
  RoundSpec spec;
  spec.plan_case = &c;
  spec.round = round;
  spec.round_dir = round_dir;
  const auto nodes = std::min<std::size_t>(static_cast<std::size_t>(c.key.nnodes), plan.hosts.size());
  spec.hosts.assign(plan.hosts.begin(), plan.hosts.begin() + static_cast<std::ptrdiff_t>(nodes));
  spec.master_port = plan.master_port > 0       ? plan.master_port
                     : plan.launcher == "local" ? free_local_port()
                                                : kDefaultMasterPort;
  return spec;
}

// Runs one round and records it in round_status.json.
RoundRow run_round(Launcher& launcher, const Plan& plan, const Deployment& deployment, const PlanCase& c, int round,
                   const std::string& case_dir, const json& chip_peaks) {
  RoundRow row{shown_key(c), round, "failed", "", std::nullopt, case_dir + "/round" + std::to_string(round)};
  fs::create_directories(row.dir);
  const RoundSpec spec = round_spec(plan, c, round, row.dir);
  const auto started = std::chrono::system_clock::now();
  const RoundOutcome outcome = launcher.run_round(plan, deployment, spec, g_stop);
  row.status = outcome.status;
  row.reason = outcome.reason;
  json status = {{"case", c.key.str()},         {"round", round},
                 {"status", outcome.status},    {"reason", outcome.reason},
                 {"launcher", launcher.name()}, {"nodes", json::array()}};
  const double started_unix = std::chrono::duration<double>(started.time_since_epoch()).count();
  status["started_unix"] = started_unix;
  double first_rank = 0, last_exit = 0;
  for (const auto& node : outcome.nodes) {
    json n = {{"host", node.host},
              {"node_rank", node.node_rank},
              {"exit_code", node.exit_code},
              {"reason", node.reason},
              {"dir", node.dir}};
    if (!node.clear_caches.empty()) n["clear_caches"] = node.clear_caches;
    if (node.clear_caches.rfind("not permitted", 0) == 0)
      std::cout << "\n    warning: " << node.host << ": clear_caches " << node.clear_caches;
    if (node.ranks_started_unix > 0)
      first_rank = first_rank == 0 ? node.ranks_started_unix : std::min(first_rank, node.ranks_started_unix);
    last_exit = std::max(last_exit, node.ranks_ended_unix);
    if (node.exit_code != 0) {
      // The end of every rank log of a failed node: what a person reads first.
      for (const auto& entry : fs::directory_iterator(node.dir)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("rank", 0) == 0) n["log_tails"][name] = tail_lines(entry.path().string(), 10);
      }
    }
    status["nodes"].push_back(n);
    if (node.node_rank == 0) row.finished = finished_in(node.dir + "/rank0.out.log");
  }
  if (row.finished) status["finished"] = row.finished->to_json();
  std::vector<std::string> monitor_files;
  for (const auto& node : outcome.nodes)
    if (fs::exists(node.dir + "/monitor.csv")) monitor_files.push_back(node.dir + "/monitor.csv");
  if (!monitor_files.empty()) {
    const monitor::MonitorAnalysis a =
        monitor::analyse_monitor_csv(monitor_files, report::accelerators_charged(monitor_files, c.key.nproc));
    json m = a.to_json();
    const double samples = row.finished && row.finished->num_trained_samples
                               ? static_cast<double>(*row.finished->num_trained_samples)
                               : 0.0;
    if (a.round_energy_j() > 0 && samples > 0) m["energy_per_sample_j"] = a.round_energy_j() / samples;
    for (const auto& item : chip_peaks.items()) m[item.key()] = item.value();
    row.energy_j = a.round_energy_j();
    row.peak_mem_bytes = a.peak_device_mem_bytes > 0 ? a.peak_device_mem_bytes : a.peak_host_mem_bytes;
    status["monitor"] = m;
  }
  // The time the harness itself costs a round: start to the ranks running, plus the last rank's
  // exit to the round recorded (docs/METRICS.md).
  const double ended_unix = unix_seconds();
  status["ended_unix"] = ended_unix;
  if (first_rank > 0 && last_exit > 0) {
    status["overhead_start_s"] = first_rank - started_unix;
    status["overhead_end_s"] = ended_unix - last_exit;
  }
  write_json_file(row.dir + "/round_status.json", status);
  return row;
}

}  // namespace

// `--dry-run`: every command the run would start, host by host, and what each node agent would
// run there (container, ranks), without starting anything.
void print_dry_run(const Plan& plan, Launcher& launcher, const Deployment& deployment) {
  const std::string run_dir = fs::absolute(plan.log_dir + "/run<YYYYmmddHHMMSS>").lexically_normal().string();
  std::cout << "Dry run: nothing is started. Launcher " << launcher.name() << ", run folder " << run_dir << "\n";
  for (const auto& c : plan.cases) {
    const std::string case_dir = run_dir + "/" + c.key.dir_name();
    for (int round = 1; round <= c.key.repeat; ++round) {
      const RoundSpec spec = round_spec(plan, c, round, case_dir + "/round" + std::to_string(round));
      std::cout << "\n# " << shown_key(c) << " round " << round << "/" << c.key.repeat << "\n";
      for (const auto& command : launcher.round_commands(plan, deployment, spec))
        std::cout << "[controller] $ " << shell_join(command) << "\n";
      for (std::size_t i = 0; i < spec.hosts.size(); ++i) {
        const NodeRequest request = node_request(plan, deployment, spec, i);
        std::string problem;
        const auto commands = node_dry_run(request, problem);
        if (!problem.empty()) std::cout << "[" << spec.hosts[i] << "] cannot describe: " << problem << "\n";
        for (const auto& command : commands) std::cout << "[" << spec.hosts[i] << "] $ " << shell_join(command) << "\n";
      }
    }
  }
}

namespace {

// What step 1 establishes: the plan, checked with its vendor's defaults, and the launcher that has
// reached every host.
struct CheckedPlan {
  Plan plan;
  std::unique_ptr<Launcher> launcher;
  Deployment deployment;
};

// Step 1: check everything before anything starts. Nothing where something is wrong (said on stderr).
std::optional<CheckedPlan> check_step(const Repo& repo, const RunOptions& options, const std::string& plan_path) {
  std::cout << "Step 1: Check environment and configs (" << display_path(plan_path) << ") ..." << std::flush;
  Diagnostics diags;
  auto plan = load_plan(plan_path, diags);
  if (plan) apply_vendor_defaults(*plan, repo, diags);
  if (plan) check_plan(*plan, repo, diags);
  std::unique_ptr<Launcher> launcher;
  Deployment deployment;
  if (plan && !diags.has_errors()) {
    deployment = deployment_of(*plan, repo, options.xpuperf);
    try {
      launcher = make_launcher(*plan);
      launcher->check(*plan, deployment, diags);  // every host reached, in parallel
    } catch (const std::exception& e) {
      diags.error(plan->raw.has("launcher") ? plan->raw.at("launcher").source : Source{plan->file, 0}, e.what());
    }
  }
  if (!plan || diags.has_errors()) {
    std::cout << " [FAILED]\n";
    std::cerr << diags.format(Severity::Warning);
    return std::nullopt;
  }
  std::cout << " [SUCCESS]\n";
  return CheckedPlan{std::move(*plan), std::move(launcher), std::move(deployment)};
}

// Step 2: the run folder (a new one, or the resumed run's), absolute: every node writes its part
// under the same path. The plan as run goes into it, and the run's log. Nothing where it cannot be made.
std::optional<std::string> prepare_step(const Plan& plan, const RunOptions& options, const std::string& plan_path) {
  const bool resume = !options.resume_dir.empty();
  std::string run_dir;
  try {
    run_dir = resume ? options.resume_dir
                     : create_unique_folder(fs::absolute(plan.log_dir).lexically_normal().string(),
                                            "run" + local_time_stamp());
    run_dir = fs::absolute(run_dir).lexically_normal().string();
    std::cout << "Step 2: Prepare run folder " << display_path(run_dir) << " ..." << std::flush;
    std::error_code ec;
    fs::create_directories(run_dir, ec);  // a resumed run's, should it have gone
    if (ec) throw FileError("cannot create " + run_dir + ": " + ec.message());
  } catch (const FileError& e) {
    std::cout << (run_dir.empty() ? "Step 2: Prepare run folder" : "") << " [FAILED]\n";
    std::cerr << "xpuperf: error: " << e.what() << "\n";
    return std::nullopt;
  }
  if (!resume) std::ofstream(run_dir + "/plan.yaml") << plan_as_run(plan);
  log::add_file(run_dir + "/xpuperf_run.log");
  log::set_console_level(log::Level::Warning);  // the console has the progress lines
  log::info(std::string(resume ? "resuming" : "starting") + " run " + run_dir + " of " + plan_path);
  std::cout << " [SUCCESS]\n";
  return run_dir;
}

// A round a resumed run finished before (ok, failed or timed out), as its row; nothing where it has
// to run.
std::optional<RoundRow> earlier_round(const PlanCase& c, int round, const std::string& round_dir) {
  const std::string status_file = round_dir + "/round_status.json";
  if (!fs::exists(status_file)) return std::nullopt;
  const json earlier = read_json_file(status_file).value_or(json());
  const std::string s = earlier.is_object() ? earlier.value("status", "") : "";
  if (s != "ok" && s != "failed" && s != "timed_out") return std::nullopt;
  RoundRow row{shown_key(c), round, s, earlier.value("reason", ""), std::nullopt, round_dir, true};
  if (earlier.contains("finished")) row.finished = FinishedInfo::from_json(earlier["finished"]);
  return row;
}

// A finished round's progress line, after its "[n/total] case round r/R ...".
void print_round_result(const RoundRow& row) {
  std::cout << " " << row.status;
  if (row.finished && !family_headline(*row.finished).empty()) std::cout << ": " << family_headline(*row.finished);
  if (row.finished && row.finished->final_metric) {
    const auto& f = *row.finished;
    std::cout << ": " << (f.converged.value_or(false) ? "converged" : "not converged") << ", " << f.final_metric->name
              << " " << fixed_digits(f.final_metric->value, 4) << ", "
              << fixed_digits(f.training_samples_per_second.value_or(0), 1) << " samples/s, e2e "
              << fixed_digits(f.e2e_time.value_or(0), 1) << " s";
  }
  if (row.status != "ok") std::cout << " (" << row.reason << ")";
  std::cout << "\n";
}

// Step 3: every round of every case; a resumed run skips the rounds it finished. Ctrl-C stops the
// round in progress and the plan.
std::vector<RoundRow> run_step(const Repo& repo, CheckedPlan& checked, const std::string& run_dir, bool resume) {
  struct sigaction action {};
  action.sa_handler = on_stop;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  const Plan& plan = checked.plan;
  int total = 0, done = 0;
  for (const auto& c : plan.cases) total += c.key.repeat;
  std::cout << "Step 3: Run " << plan.cases.size() << " case" << (plan.cases.size() == 1 ? "" : "s") << ", " << total
            << " round" << (total == 1 ? "" : "s") << " (launcher " << checked.launcher->name() << ")\n";
  std::vector<RoundRow> rows;
  for (const auto& c : plan.cases) {
    const std::string case_dir = run_dir + "/" + c.key.dir_name();
    const json peaks = chip_peaks(repo, plan.vendor, c.key.hardware);  // the same for every round
    for (int round = 1; round <= c.key.repeat && g_stop == 0; ++round) {
      std::cout << "  [" << ++done << "/" << total << "] " << shown_key(c) << " round " << round << "/" << c.key.repeat
                << " ..." << std::flush;
      if (auto row = resume ? earlier_round(c, round, case_dir + "/round" + std::to_string(round)) : std::nullopt) {
        std::cout << " finished in the earlier run (" << row->status << "), skipped\n";
        rows.push_back(*row);
        continue;
      }
      RoundRow row = run_round(*checked.launcher, plan, checked.deployment, c, round, case_dir, peaks);
      print_round_result(row);
      log::info(shown_key(c) + " round " + std::to_string(round) + ": " + row.status + " " + row.reason);
      rows.push_back(row);
    }
  }
  return rows;
}

// Step 4: collect (the launchers brought the node folders here), summarise, record in the history,
// and say where everything is. The exit status: 0 when every round is ok, 130 when interrupted.
int collect_step(const Plan& plan, const std::string& run_dir, const std::vector<RoundRow>& rows) {
  std::cout << "Step 4: Collect and report ..." << std::flush;
  std::string summary;
  try {
    report::Summary result;
    summary = report::write_summary(run_dir, &result);
    std::cout << " [SUCCESS]\n";
    if (plan.history_db != "none") {
      const std::string db = plan.history_db.empty() ? report::default_history_path() : plan.history_db;
      try {
        report::record_run(db, result, run_dir);
        log::info("recorded in the history " + db);
      } catch (const std::exception& e) {
        std::cerr << "xpuperf: warning: the run was not added to the history " << db << ": " << e.what() << "\n";
      }
    }
  } catch (const std::exception& e) {
    std::cout << " [FAILED]\n";
    std::cerr << "xpuperf: error: the summary could not be written: " << e.what() << "\n";
  }
  print_table(rows);
  if (!summary.empty()) std::cout << "\n" << summary << "\n(summary.json and summary.md in the run folder)\n";
  if (g_stop != 0) {
    std::cout << "\nInterrupted: the rounds above were recorded; finish with `xpuperf run --resume " << run_dir
              << "`\n";
    return 130;
  }
  std::cout << "\nSee all logs in " << display_path(run_dir) << "\n";
  if (!summary.empty()) {
    std::error_code absolute_error;
    const std::string html = fs::absolute(fs::path(run_dir) / "report.html", absolute_error).string();
    std::cout << "Report with the curves: " << display_path(run_dir + "/report.html")
              << "\n  open it in a browser: xdg-open " << shell_quote(html) << "  (or file://" << html << ")\n";
  }
  const bool all_ok = std::all_of(rows.begin(), rows.end(), [](const RoundRow& r) { return r.status == "ok"; });
  return all_ok ? 0 : 1;
}

}  // namespace

// DESIGN's four steps: check, prepare, run the rounds, collect.
int run_plan(const Repo& repo, const RunOptions& options) {
  std::cout << "==============================================\n"
            << "  xpuperf " << kVersion << " (git " << kGitHash << ")\n"
            << "==============================================\n";
  const bool resume = !options.resume_dir.empty();
  const std::string plan_path = resume ? options.resume_dir + "/plan.yaml" : options.plan_path;
  auto checked = check_step(repo, options, plan_path);
  if (!checked) return 2;
  if (options.dry_run) {
    print_dry_run(checked->plan, *checked->launcher, checked->deployment);
    return 0;
  }
  log::Level level = log::Level::Info;
  log::parse_level(checked->plan.log_level, level);
  log::set_level(level);
  const auto run_dir = prepare_step(checked->plan, options, plan_path);
  if (!run_dir) return 2;
  const std::vector<RoundRow> rows = run_step(repo, *checked, *run_dir, resume);
  return collect_step(checked->plan, *run_dir, rows);
}

}  // namespace xpuperf
