// `xpuperf check PLAN`: reads a plan and the merged config of every case it names, and prints
// every problem at once.

#include <algorithm>
#include <iostream>

#include "xpuperf/cli/commands.h"
#include "xpuperf/core/case_family.h"
#include "xpuperf/core/plan.h"

namespace xpuperf::cli {

namespace {

std::string join_sets(const std::vector<std::string>& sets) {
  std::string out;
  for (const auto& s : sets) out += (out.empty() ? "" : " ") + s;
  return out;
}

// Problems in file order, then line order, so the output reads top to bottom like the files.
std::vector<Diagnostic> in_file_order(const Diagnostics& diags) {
  std::vector<std::string> files;
  for (const auto& d : diags.items())
    if (std::find(files.begin(), files.end(), d.where.file) == files.end()) files.push_back(d.where.file);
  auto rank = [&files](const Diagnostic& d) {
    return std::make_pair(std::find(files.begin(), files.end(), d.where.file) - files.begin(), d.where.line);
  };
  std::vector<Diagnostic> sorted = diags.items();
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&rank](const Diagnostic& a, const Diagnostic& b) { return rank(a) < rank(b); });
  return sorted;
}

int run_check(const GlobalOptions& global, const std::string& plan_path, bool quiet) {
  Diagnostics diags;
  std::optional<Plan> plan;
  if (auto text = read_text_file(plan_path, diags)) plan = read_plan_partially(*text, display_path(plan_path), diags);
  if (plan) {
    const Repo repo = find_repo(global, plan_path);
    apply_vendor_defaults(*plan, repo, diags);
    check_plan(*plan, repo, diags);
  }
  for (const auto& d : in_file_order(diags)) {
    if (quiet && d.severity == Severity::Info) continue;
    std::cerr << format_diagnostic(d) << "\n";
  }
  if (diags.has_errors()) {
    const int n = diags.error_count();
    std::cerr << "check failed: " << n << " problem" << (n == 1 ? "" : "s") << " in " << display_path(plan_path)
              << "\n";
    return 1;
  }
  std::cout << "Plan " << display_path(plan_path) << " is valid: vendor " << plan->vendor << ", " << plan->hosts.size()
            << " host" << (plan->hosts.size() == 1 ? "" : "s") << " (launcher " << plan->launcher << "), "
            << plan->cases.size() << " case" << (plan->cases.size() == 1 ? "" : "s") << ".\n";
  for (const auto& c : plan->cases) {
    // A training case with its data folder; the others after their family's name.
    const CaseFamily& family = case_family(c.key);
    std::cout << "  "
              << (family.reads_data_dir() ? family.key_text(c.key) + "  data: " + c.data_dir
                                          : std::string(family.name()) + " " + family.key_text(c.key))
              << (c.sets.empty() ? "" : "  set: " + join_sets(c.sets)) << "\n";
  }
  return 0;
}

}  // namespace

void add_check_command(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd = app.add_subcommand("check", "Check a plan and the merged config of every case it names");
  cmd->footer("Exits 0 when the plan can run, 1 when anything is wrong (every problem is listed).");
  auto plan = std::make_shared<std::string>();
  auto quiet = std::make_shared<bool>(false);
  cmd->add_option("plan", *plan, "Plan file (YAML), e.g. plans/quickstart.yaml")->required();
  cmd->add_flag("-q,--quiet", *quiet, "Show errors and warnings only, not the vendor's changes");
  cmd->callback([&global, &exit_code, plan, quiet] { exit_code = run_check(global, *plan, *quiet); });
}

}  // namespace xpuperf::cli
