// xpuperf: run benchmark plans on AI accelerators and report what was measured.

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include "xpuperf/cli/commands.h"
#include "xpuperf/core/config.h"
#include "xpuperf/core/crash_report.h"
#include "xpuperf/core/strings.h"
#include "xpuperf/core/version.h"

namespace xpuperf::cli {

Repo find_repo(const GlobalOptions& global, const std::string& near) {
  for (const char* dir : {"cases", "vendors"}) {
    std::error_code ec;
    if (!global.root.empty() && !std::filesystem::is_directory(global.root + "/" + dir, ec))
      throw CommandError("--root " + global.root + " has no " + dir + "/ folder; point it at an xpuperf checkout");
    // The same check for XPUPERF_ROOT, which Repo::discover takes as it is (an empty `list` otherwise).
    const char* env = std::getenv("XPUPERF_ROOT");
    if (global.root.empty() && env && *env && !std::filesystem::is_directory(std::string(env) + "/" + dir, ec))
      throw CommandError(std::string("XPUPERF_ROOT=") + env + " has no " + dir +
                         "/ folder; point it at an xpuperf checkout, or unset it");
  }
  auto repo = Repo::discover(global.root, near);
  if (!repo)
    throw CommandError(
        "cannot find the xpuperf content folders (cases/ and vendors/); run from the xpuperf checkout, "
        "or pass --root DIR or set XPUPERF_ROOT");
  return *repo;
}

// CLI11 takes a word that is no subcommand for an argument of the main command, then answers
// "A subcommand is required" (exit 106), and prints the main help for `word --help`. A mistyped
// command is the user's error: name it, suggest the closest command, exit 1.
std::optional<std::string> unknown_command(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--root") {
      ++i;  // its value
      continue;
    }
    if (arg.rfind("-", 0) == 0) continue;
    if (std::find(names.begin(), names.end(), arg) != names.end()) return std::nullopt;
    std::string commands;
    for (const auto& n : names) commands += (commands.empty() ? "" : ", ") + n;
    const std::string near = closest_match(arg, names);
    return "unknown command '" + arg + "'" + (near.empty() ? "" : "; did you mean '" + near + "'?") +
           "\nCommands: " + commands + ". `xpuperf --help` describes them.";
  }
  return std::nullopt;
}

}  // namespace xpuperf::cli

int main(int argc, char** argv) {
  using namespace xpuperf;
  install_crash_report();
  CLI::App app{
      "xpuperf: a fair, reproducible benchmark of AI accelerators.\n"
      "Runs standard training, inference and hardware cases on a vendor's chips and reports what was measured."};
  app.set_version_flag("--version", std::string("xpuperf ") + kVersion + " (git " + kGitHash + ")");
  app.require_subcommand(1);
  app.fallthrough();

  cli::GlobalOptions global;
  global.argv.assign(argv, argv + argc);
  app.add_option("--root", global.root,
                 "Folder holding cases/ and vendors/ (default: $XPUPERF_ROOT, else found from the working folder)");

  int exit_code = 0;
  cli::add_check_command(app, global, exit_code);
  cli::add_config_command(app, global, exit_code);
  cli::add_list_command(app, global, exit_code);
  cli::add_train_command(app, global, exit_code);
  cli::add_base_command(app, global, exit_code);
  cli::add_vendor_command(app, global, exit_code);
  cli::add_op_command(app, global, exit_code);
  cli::add_infer_command(app, global, exit_code);
  cli::add_run_command(app, global, exit_code);
  cli::add_sweep_command(app, global, exit_code);
  cli::add_node_command(app, global, exit_code);
  cli::add_monitor_command(app, global, exit_code);
  cli::add_report_command(app, global, exit_code);
  cli::add_compare_command(app, global, exit_code);
  cli::add_history_command(app, global, exit_code);
  cli::add_data_command(app, global, exit_code);

  if (const auto message = cli::unknown_command(app, argc, argv)) {
    std::cerr << "xpuperf: error: " << *message << "\n";
    return 1;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11's own codes (105, 106, 109, ...) say "bad input" in many ways; the README promises 1.
    return app.exit(e) == 0 ? 0 : 1;
  } catch (const cli::CommandError& e) {
    std::cerr << "xpuperf: error: " << terminal_safe(e.what()) << "\n";
    return e.exit_code();
  } catch (const ConfigError& e) {
    std::cerr << "xpuperf: error: " << terminal_safe(e.what()) << "\n";
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // A folder without rights, a symlink loop, a path under a regular file: the machine's state,
    // not a bug. The library's message names the path(s) and the system's reason.
    std::cerr << "xpuperf: error: " << terminal_safe(e.what()) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "xpuperf: internal error: " << terminal_safe(e.what()) << "\n"
              << "This is a bug in xpuperf; please report it with the command you ran.\n";
    return 70;
  }
  return exit_code;
}
