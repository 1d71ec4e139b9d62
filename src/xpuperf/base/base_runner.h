#pragma once
// Runs one base case in this process (`xpuperf base`, and each rank the node agent starts for a
// base case of a plan): merges its config, picks the implementation for the backend, runs it,
// prints a table and the PerfLog FINISHED event with every figure beside the vendor's datasheet.

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "xpuperf/core/rank_env.h"
#include "xpuperf/core/repo.h"
#include "xpuperf/core/vendor_spec.h"

namespace xpuperf::base {

struct BaseRequest {
  std::string metric;
  std::string vendor = "cpu";
  std::string hardware = "CPU";
  std::string backend = "auto";   // auto: cpu for the cpu vendor, else cuda
  int device = -1;                // -1: the local rank's
  std::vector<std::string> sets;  // key=value
  RankEnv env;
  VendorSpec vendor_spec;  // vendors/<vendor>/vendor.yaml
};

// Exit codes.
inline constexpr int kBaseOk = 0;
inline constexpr int kBaseBadInput = 1;   // config, unknown metric (printed)
inline constexpr int kBaseWrong = 2;      // measured, but the results check failed
inline constexpr int kBaseCannotRun = 3;  // not built in for the backend, or its filter said no

int run_base(const Repo& repo, const BaseRequest& request, std::ostream& out, std::ostream& err);

// The backend "auto" means for a vendor and a metric: cpu for a CPU vendor, cuda for a CUDA one;
// for a plug-in's device the plug-in's own implementation (registered under the vendor's name)
// where it has one for the metric, else "torch" (PyTorch's primitives on the device). A vendor
// folder without vendor.yaml: cpu for the vendor named cpu, else cuda.
std::string resolve_backend(const std::string& backend, const std::string& metric, const VendorSpec& vendor);

// Adds datasheet_value and ratio to each figure of `figures` (JSON as FINISHED carries them)
// from chips.<hardware> of the vendor's specs.yaml, when it lists the figure's datasheet path.
void add_datasheet(const Repo& repo, const std::string& vendor, const std::string& hardware, nlohmann::json& figures);

}  // namespace xpuperf::base
