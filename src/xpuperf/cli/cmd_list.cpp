// `xpuperf list`: the cases, vendors and hardware configs found on disk.

#include <iostream>

#include "xpuperf/cli/commands.h"

namespace xpuperf::cli {

namespace {

int run_list(const GlobalOptions& global) {
  const Repo repo = find_repo(global);
  std::cout << "Content folder: " << (repo.root().empty() ? "." : repo.root()) << "\n\n";
  std::cout << "Training cases (cases/training/<model>/<framework>):\n";
  const auto models = repo.training_models();
  if (models.empty()) std::cout << "  none\n";
  for (const auto& model : models)
    std::cout << "  " << model << "  frameworks: " << join_or_none(repo.training_frameworks(model)) << "\n";

  std::cout << "\nInference cases (cases/inference/<case>):\n";
  std::cout << "  " << join_or_none(repo.inference_cases()) << "\n";

  std::cout << "\nVendors (vendors/<vendor>) and their training configs (<hardware>x<nnodes>x<nproc>):\n";
  const auto vendors = repo.vendors();
  if (vendors.empty()) std::cout << "  none\n";
  for (const auto& vendor : vendors) {
    std::cout << "  " << vendor << "\n";
    const auto cases = repo.vendor_training_cases(vendor);
    if (cases.empty()) std::cout << "    no training configs\n";
    for (const auto& dir : cases) {
      const auto dash = dir.rfind('-');
      const std::string model = dash == std::string::npos ? dir : dir.substr(0, dash);
      const std::string framework = dash == std::string::npos ? "" : dir.substr(dash + 1);
      std::cout << "    " << dir << ": " << join_or_none(repo.vendor_training_configs(vendor, model, framework))
                << "\n";
    }
  }
  return 0;
}

}  // namespace

void add_list_command(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd = app.add_subcommand("list", "List the cases, vendors and hardware configs found on disk");
  cmd->callback([&global, &exit_code] { exit_code = run_list(global); });
}

}  // namespace xpuperf::cli
