#include "xpuperf/cli/commands.h"

namespace xpuperf::cli {

void add_case_options(CLI::App* cmd, const CaseOptionTargets& to, bool required) {
  cmd->add_option("--framework", *to.framework, "Framework of the case")->capture_default_str();
  auto* vendor = cmd->add_option("--vendor", *to.vendor, "Vendor whose config to use");
  auto* data_dir = cmd->add_option("--data-dir", *to.data_dir, "Data folder of the case");
  if (required) {
    vendor->required();
    data_dir->required();
  } else {
    vendor->capture_default_str();
  }
  cmd->add_option("--set", *to.sets, to.sets_help);
}

}  // namespace xpuperf::cli
