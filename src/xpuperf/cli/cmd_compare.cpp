// `xpuperf compare RUN_A RUN_B`: per case, B/A of each figure and whether the rounds say the
// change is real.

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "xpuperf/cli/commands.h"
#include "xpuperf/core/files.h"
#include "xpuperf/report/compare.h"
#include "xpuperf/report/html.h"
#include "xpuperf/report/summary.h"

namespace xpuperf::cli {

namespace {

// What a run holds, for the message when two runs have nothing to compare: each case with its
// ok rounds, and the first reason a round failed.
std::string cases_of(const report::Summary& summary, const std::string& run_dir) {
  std::ostringstream out;
  out << "\n  " << run_dir << ": ";
  if (summary.cases.empty()) return out.str() + "no case ran (an empty or cut-short run)";
  bool first = true;
  for (const auto& c : summary.cases) {
    int ok = 0;
    std::string why;
    for (const auto& r : c.rounds) {
      if (r.ok())
        ++ok;
      else if (why.empty())
        why = r.status + ": " + r.reason;
    }
    out << (first ? "" : "; ") << c.key << " " << ok << " of " << c.rounds.size() << " rounds ok"
        << (why.empty() ? "" : " (" + why + ")");
    first = false;
  }
  return out.str();
}

// A run to compare: a summary.json, or a run folder: its stored summary.json (read through the
// result model, so it holds once the rank logs are pruned), else its summary rebuilt from the
// result tree (a run cut short before it wrote one, a FlagPerf tree).
report::Summary summary_of(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw std::runtime_error(path + " is not a run folder or a summary.json: it does not exist");
  if (!fs::is_directory(path, ec)) return report::read_summary_file(path);
  if (fs::exists(fs::path(path) / "summary.json", ec)) return report::read_summary_file(path);
  return report::build_summary(path);
}

int run_compare(const std::string& run_a, const std::string& run_b, double fail_percent, const std::string& html) {
  report::Summary a, b;
  try {
    a = summary_of(run_a);
    b = summary_of(run_b);
  } catch (const std::runtime_error& e) {
    throw CommandError(e.what());
  }
  const auto rows = report::compare_summaries(a, b);
  if (rows.empty())
    throw CommandError("the two runs have no case with successful rounds in common:" + cases_of(a, run_a) +
                       cases_of(b, run_b));
  std::cout << "A: " << run_a << "\nB: " << run_b << "\n\n"
            << "| case | figure | mean A | mean B | B / A | Welch p | verdict |\n"
            << "| --- | --- | ---: | ---: | ---: | ---: | --- |\n";
  int regressions = 0;
  for (const auto& r : rows) {
    const std::string verdict = report::verdict(r, fail_percent);
    if (fail_percent >= 0 && r.regression(fail_percent)) ++regressions;
    std::cout << std::setprecision(6) << "| " << r.case_key << " | " << r.figure << " | " << r.mean_a << " | "
              << r.mean_b << " | " << std::fixed << std::setprecision(3) << r.ratio << " | "
              << (r.test ? std::to_string(r.test->p).substr(0, 6) : std::string("")) << " | " << verdict << " |\n"
              << std::defaultfloat;
  }
  if (!html.empty()) {
    try {
      write_text_file(html, report::compare_html(a, b, run_a, run_b, rows, fail_percent));
    } catch (const std::runtime_error& e) {
      throw CommandError(std::string("--html ") + e.what());
    }
    std::cout << "\nWrote " << html << " (open it in a browser).\n";
  }
  if (regressions > 0) {
    std::cout << "\n"
              << regressions << " regression" << (regressions == 1 ? "" : "s") << " beyond " << fail_percent << " %\n";
    return 1;
  }
  return 0;
}

}  // namespace

void add_compare_command(CLI::App& app, const GlobalOptions&, int& exit_code) {
  auto* cmd = app.add_subcommand("compare", "Compare two runs case by case, with Welch's t-test over their rounds");
  cmd->footer(
      "A change is significant when Welch's two-sided p < 0.05. Exit code 1 with --fail-on-regression\n"
      "when a figure got significantly worse by more than the percentage (for CI).");
  auto a = std::make_shared<std::string>();
  auto b = std::make_shared<std::string>();
  auto fail = std::make_shared<double>(-1);
  auto html = std::make_shared<std::string>();
  cmd->add_option("run_a", *a, "The reference run: its folder, or a summary.json")->required();
  cmd->add_option("run_b", *b, "The run to compare with it: its folder, or a summary.json")->required();
  cmd->add_option("--fail-on-regression", *fail, "Exit 1 when a figure is significantly worse by more than PCT %");
  cmd->add_option("--html", *html,
                  "Also write the comparison as one self-contained HTML page: the verdicts, and both runs' "
                  "training curves on the same axes");
  cmd->callback([&exit_code, a, b, fail, html] { exit_code = run_compare(*a, *b, *fail, *html); });
}

}  // namespace xpuperf::cli
