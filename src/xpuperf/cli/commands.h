#pragma once
// Each subcommand lives in a file of its own and adds itself to the app here.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "xpuperf/core/repo.h"

namespace xpuperf::cli {

// Options every subcommand shares.
struct GlobalOptions {
  std::string root;               // --root: the folder holding cases/ and vendors/
  std::vector<std::string> argv;  // the command line as given, to start copies of this program
};

// A user-caused problem a command reports and exits on (non-zero), without a C++ trace.
class CommandError : public std::runtime_error {
 public:
  explicit CommandError(const std::string& message, int exit_code = 1)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

// The content tree to use; throws CommandError saying how to point at one when none is found.
Repo find_repo(const GlobalOptions& global, const std::string& near = "");

// Where a case's config and data come from, as train, infer and sweep take them: --framework,
// --vendor, --data-dir and --set (the case itself and --hardware differ between them: a name or a
// positional; a chip or a vendor config). `required`: --vendor and --data-dir must be given (sweep).
struct CaseOptionTargets {
  std::string* framework;
  std::string* vendor;
  std::string* data_dir;
  std::vector<std::string>* sets;
  std::string sets_help = "Override a parameter: --set key=value (repeatable)";
};
void add_case_options(CLI::App* cmd, const CaseOptionTargets& to, bool required = false);

// Each returns the exit code through `exit_code` once its callback ran.
void add_check_command(CLI::App& app, const GlobalOptions& global, int& exit_code);
void add_config_command(CLI::App& app, const GlobalOptions& global, int& exit_code);
void add_list_command(CLI::App& app, const GlobalOptions& global, int& exit_code);
void add_train_command(CLI::App& app, const GlobalOptions& global, int& exit_code);
void add_node_command(CLI::App& app, const GlobalOptions& global, int& exit_code);
void add_run_command(CLI::App& app, const GlobalOptions& global, int& exit_code);
void add_sweep_command(CLI::App& app, const GlobalOptions& global, int& exit_code);
void add_monitor_command(CLI::App& app, const GlobalOptions& global, int& exit_code);
void add_report_command(CLI::App& app, const GlobalOptions& global, int& exit_code);
void add_compare_command(CLI::App& app, const GlobalOptions& global, int& exit_code);
void add_history_command(CLI::App& app, const GlobalOptions& global, int& exit_code);
void add_base_command(CLI::App& app, const GlobalOptions& global, int& exit_code);
void add_infer_command(CLI::App& app, const GlobalOptions& global, int& exit_code);
void add_data_command(CLI::App& app, const GlobalOptions& global, int& exit_code);
void add_vendor_command(CLI::App& app, const GlobalOptions& global, int& exit_code);
void add_op_command(CLI::App& app, const GlobalOptions& global, int& exit_code);

}  // namespace xpuperf::cli
