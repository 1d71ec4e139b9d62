// `xpuperf vendor check <vendor>`: a vendor's conformance, what no benchmark gives a vendor today.
// Its plug-in is loaded in `--nproc` ranks, which check the device (memory, copies, streams and
// events), xpuperf's operators with the device's kernels against their composite form on the CPU
// (values and gradients, per dtype) and every collective against the sums it must give
// (base/conformance.h); then LeNet-5 trains a few steps on the vendor and on the CPU and the two
// loss curves are compared. One pass/fail table with the measured errors; exit 0 when all pass.

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "xpuperf/cli/commands.h"
#include "xpuperf/cli/local_ranks.h"
#include "xpuperf/cli/torch_entry.h"
#include "xpuperf/core/files.h"
#include "xpuperf/core/perflog.h"
#include "xpuperf/core/process.h"
#include "xpuperf/core/rank_env.h"
#include "xpuperf/core/strings.h"
#include "xpuperf/core/vendor_spec.h"

namespace xpuperf::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct VendorOptions {
  std::string vendor;
  std::string hardware;
  int nproc = 2;
  int steps = 10;
  double curve_tolerance = 1e-3;
  bool rank = false;  // the hidden check-rank: one rank's checks, in xpuperf-torch
};

struct Row {
  std::string group, name, dtype, note;
  double error = 0, tolerance = 0;
  bool pass = true;
};

// A folder for the runs' output, removed when done.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "xpuperf-vendor-check-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw CommandError("cannot make a temporary folder in " + fs::temp_directory_path().string());
    path = pattern;
  }
  ~ScratchDir() { remove_tree(path); }  // core/files.h: why not std::filesystem::remove_all
};

// The last lines of a run's output, for a failure's note.
std::string tail_of(const std::string& text, std::size_t lines = 3) {
  std::vector<std::string> all;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) all.push_back(line);
  std::string out;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i)
    out += (out.empty() ? "" : " / ") + printable(all[i], 1000);
  return out;
}

// The ranks' rows merged: a check passes when it passed on every rank, with the largest error.
void merge_rank_rows(const std::string& text, std::vector<Row>& rows, std::string& device, std::string& plugin) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("XPUPERF_CHECK_DEVICE ", 0) == 0) {
      const auto j = json::parse(line.substr(21));
      device = j.value("device", "");
      plugin = j.value("plugin", "");
      continue;
    }
    if (line.rfind("XPUPERF_CHECK ", 0) != 0) continue;
    const auto j = json::parse(line.substr(14));
    Row r{j["group"], j["name"], j["dtype"], j["note"], j["error"], j["tolerance"], j["pass"]};
    const auto same = std::find_if(rows.begin(), rows.end(), [&](const Row& o) {
      return o.group == r.group && o.name == r.name && o.dtype == r.dtype;
    });
    if (same == rows.end()) {
      rows.push_back(r);
      continue;
    }
    same->pass = same->pass && r.pass;
    same->error = (same->error < 0 || r.error < 0) ? -1 : std::max(same->error, r.error);
    if (!r.pass && same->note.empty()) same->note = r.note;
  }
}

// This program, as given, for the runs the check starts.
std::vector<std::string> self(const std::string& root) {
  return {"/proc/self/exe", "--root", root};
}

void run_ranks(const Repo& repo, const VendorOptions& opts, const std::string& scratch, std::vector<Row>& rows,
               std::string& device, std::string& plugin) {
  std::vector<std::string> argv = self(repo.root());
  argv.insert(argv.end(), {"vendor", "check-rank", opts.vendor});
  const auto log_of = [&scratch](int r) { return scratch + "/rank" + std::to_string(r) + ".log"; };
  auto ranks = start_local_ranks(opts.nproc, 0, argv, log_of);
  const GroupOutcome outcome = wait_all(ranks, std::chrono::minutes(10), nullptr);
  for (int r = 0; r < opts.nproc; ++r) {
    const std::string text = read_file_or_empty(log_of(r));
    merge_rank_rows(text, rows, device, plugin);
    const ExitStatus& s = outcome.statuses[static_cast<std::size_t>(r)];
    if (!s.ok())
      rows.push_back({"ranks", "rank " + std::to_string(r) + " ran to its end", "-",
                      s.describe() + ": " + tail_of(text), -1, 0, false});
  }
}

std::vector<double> loss_curve_of(const std::string& text) {
  std::istringstream in(text);
  for (const auto& e : parse_perflog(in).events)
    if (e.event == "FINISHED" && e.value.contains("loss_curve"))
      return e.value["loss_curve"].get<std::vector<double>>();
  return {};
}

// LeNet-5 on synthetic images for a few steps on `vendor` and on the CPU: the two loss curves.
void check_training_curve(const Repo& repo, const VendorOptions& opts, const std::string& hardware,
                          const std::string& scratch, std::vector<Row>& rows) {
  const std::string name = "LeNet-5, " + std::to_string(opts.steps) + " steps on synthetic images, against the CPU";
  auto train = [&](const std::string& vendor, const std::string& hw) {
    ProcessSpec spec;
    spec.argv = self(repo.root());
    spec.argv.insert(spec.argv.end(), {"train", "--case", "lenet5", "--vendor", vendor, "--hardware", hw, "--set",
                                       "synthetic_data=true", "--set", "max_steps=" + std::to_string(opts.steps),
                                       "--set", "record_loss_curve=true", "--set", "num_threads=1"});
    spec.unset_env = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};
    spec.log_path = scratch + "/train-" + vendor + ".log";
    const ExitStatus s = run_process(spec, std::chrono::minutes(10));
    const std::string text = read_file_or_empty(spec.log_path);
    if (!s.ok()) throw std::runtime_error("xpuperf train on " + vendor + " " + s.describe() + ": " + tail_of(text));
    return loss_curve_of(text);
  };
  try {
    const auto got = train(opts.vendor, hardware);
    const auto want = train("cpu", "CPU");
    if (got.size() != want.size() || got.empty())
      throw std::runtime_error("the curves have " + std::to_string(got.size()) + " and " + std::to_string(want.size()) +
                               " steps");
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
    rows.push_back({"training", name, "float32", "largest loss difference over the steps", worst, opts.curve_tolerance,
                    std::isfinite(worst) && worst <= opts.curve_tolerance});
  } catch (const std::exception& e) {
    rows.push_back({"training", name, "float32", e.what(), -1, opts.curve_tolerance, false});
  }
}

std::string number(double v) {
  if (v < 0) return "-";
  std::ostringstream s;
  s << std::setprecision(3) << v;
  return s.str();
}

// The hardware of the vendor's LeNet-5 config for one process ("SIM" of config_SIMx1x1.yaml).
std::string lenet5_hardware(const Repo& repo, const std::string& vendor) {
  std::vector<std::string> found;
  for (const auto& config : repo.vendor_training_configs(vendor, "lenet5", "libtorch")) {
    const auto x = config.find("x1x1");
    if (x != std::string::npos && x + 4 == config.size()) found.push_back(config.substr(0, x));
  }
  if (found.size() == 1) return found[0];
  throw CommandError("vendor " + vendor + " has " + (found.empty() ? std::string("no") : join_or_none(found)) +
                     " LeNet-5 config for one process (vendors/" + vendor +
                     "/training/lenet5-libtorch/config/config_<HW>x1x1.yaml): " +
                     (found.empty() ? "write one" : "say which with --hardware"));
}

int run_check(const GlobalOptions& global, const VendorOptions& opts) {
  const Repo repo = find_repo(global);
  const VendorSpec spec = load_vendor_spec(repo, opts.vendor);
  if (opts.rank) {
    hand_over_to_torch(global.argv);
    if (!torch_entry()) throw CommandError(without_torch("check a vendor"));
    if (!torch_entry()->vendor_check_rank)
      throw CommandError("this is the quickstart's build, which has no vendor check: `make build` adds it");
    Diagnostics diags;
    const auto env = read_rank_env(diags);
    if (!env) {
      std::cerr << diags.format();
      return 1;
    }
    return torch_entry()->vendor_check_rank(spec, *env, std::cout, std::cerr);
  }
  if (!torch_entry() && torch_binary().empty()) throw CommandError(without_torch("check a vendor"));
  if (opts.nproc < 1) throw CommandError("--nproc must be at least 1");
  const std::string hardware = opts.hardware.empty() ? lenet5_hardware(repo, opts.vendor) : opts.hardware;
  const ScratchDir scratch;
  std::vector<Row> rows;
  std::string device = "?", plugin = "none";
  std::cout << "xpuperf vendor check " << opts.vendor << ": " << opts.nproc << " rank" << (opts.nproc == 1 ? "" : "s")
            << ", then LeNet-5 on " << hardware << " against the CPU ...\n"
            << std::flush;
  run_ranks(repo, opts, scratch.path, rows, device, plugin);
  check_training_curve(repo, opts, hardware, scratch.path, rows);
  int passed = 0;
  std::cout << "\nvendor " << opts.vendor << ", device " << device << ", plug-in " << plugin << "\n\n"
            << "| group | check | dtype | error | tolerance | result |\n| --- | --- | --- | ---: | ---: | --- |\n";
  for (const auto& r : rows) {
    passed += r.pass ? 1 : 0;
    std::cout << "| " << r.group << " | " << r.name << " | " << r.dtype << " | " << number(r.error) << " | "
              << number(r.tolerance) << " | " << (r.pass ? "pass" : "FAIL") << (r.note.empty() ? "" : ": " + r.note)
              << " |\n";
  }
  std::cout << "\n" << passed << " of " << rows.size() << " checks passed\n";
  return passed == static_cast<int>(rows.size()) ? 0 : 2;
}

}  // namespace

void add_vendor_command(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd = app.add_subcommand("vendor", "A vendor's plug-in: check it works (conformance)");
  cmd->require_subcommand(1);
  auto opts = std::make_shared<VendorOptions>();
  auto* check = cmd->add_subcommand(
      "check", "Check a vendor's device, xpuperf's operators, its collectives and a LeNet-5 curve; a pass/fail table");
  check->footer(
      "Errors are relative to the reference's largest magnitude: the operators with the device's kernels against "
      "their composite form on the CPU (float32 to 1e-5, bfloat16 to 3e-2), the collectives exactly, the loss curve "
      "within --curve-tolerance. Exit 0 when every check passes, 2 when one fails. docs/VENDORS.md.");
  check->add_option("vendor", opts->vendor, "The vendor (vendors/<vendor>/vendor.yaml)")->required();
  check->add_option("--hardware", opts->hardware,
                    "The chip of its LeNet-5 config (default: the only config_<HW>x1x1.yaml it has)");
  check->add_option("--nproc", opts->nproc, "Ranks on this host, for the collectives (one device each)")
      ->capture_default_str();
  check->add_option("--steps", opts->steps, "LeNet-5 steps on each side")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  check->add_option("--curve-tolerance", opts->curve_tolerance, "Largest loss difference from the CPU's curve")
      ->capture_default_str();
  check->callback([&global, &exit_code, opts] { exit_code = run_check(global, *opts); });
  auto* rank = cmd->add_subcommand("check-rank", "One rank of `vendor check` (started by it)");
  rank->group("");  // hidden
  rank->add_option("vendor", opts->vendor)->required();
  rank->callback([&global, &exit_code, opts] {
    opts->rank = true;
    exit_code = run_check(global, *opts);
  });
}

}  // namespace xpuperf::cli
