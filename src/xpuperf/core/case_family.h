#pragma once
// The four families of cases behind one interface: training (FlagPerf's training cases),
// inference (its inference framework's), base (the hardware micro-benchmarks) and operation (its
// operator benchmarks). What differs
// between them — how a plan writes one, how its config merges, the command each of its ranks runs,
// which devices a rank sees, its vendor config folder — is decided here, once, instead of by a
// branch in each place that handles a case.

#include <optional>
#include <string>
#include <vector>

#include "xpuperf/core/case_key.h"
#include "xpuperf/core/config.h"
#include "xpuperf/core/repo.h"
#include "xpuperf/core/training_config.h"

namespace xpuperf {

// What a case's config merges from besides its files.
struct CaseConfigRequest {
  std::string vendor;
  std::string data_dir;              // training cases: the plan's data folder
  std::vector<std::string> sets;     // key=value: the plan's, then --set
  std::optional<Source> sets_where;  // the plan line the sets are charged to; none: each to its text
  Source where;                      // where the case was named
  Source vendor_where;               // where the vendor was chosen; empty: `where`
};

// What a rank's command names besides the case.
struct RankCommand {
  std::string root, vendor, data_dir, out_dir;
  std::vector<std::string> sets;  // key=value
};

class CaseFamily {
 public:
  virtual ~CaseFamily() = default;
  virtual const char* name() const = 0;  // "training", "inference", "base", "operation"
  virtual bool owns(const CaseKey& key) const = 0;
  // The case as a plan writes it ("lenet5:libtorch:CPU:1:1:1", "resnet50:libtorch:H200:1",
  // "computation-BF16:H200:1:1:1").
  virtual std::string key_text(const CaseKey& key) const = 0;
  // The merged config; each problem goes to `diags`, and nothing comes back when one is an error.
  virtual std::optional<Config> load_config(const Repo& repo, const CaseKey& key, const CaseConfigRequest& request,
                                            Diagnostics& diags) const = 0;
  // The xpuperf command line of one of its ranks (argv[0] the running binary).
  virtual std::vector<std::string> rank_argv(const CaseKey& key, const RankCommand& command) const = 0;
  // Whether its ranks read a data folder the plan gives (checked to exist before a local run).
  virtual bool reads_data_dir() const { return false; }
  // Whether a rank sees every device of its host rather than its own (a base case measuring the
  // whole host: peer copies between every pair).
  virtual bool sees_every_device(const Config& config) const {
    (void)config;
    return false;
  }
  // The vendor's config folder of the case (its environment_variables.sh); "" where it has none.
  virtual std::string vendor_config_dir(const Repo& repo, const std::string& vendor, const CaseKey& key) const {
    (void)repo, (void)vendor, (void)key;
    return "";
  }
};

// The family a case key belongs to.
const CaseFamily& case_family(const CaseKey& key);

}  // namespace xpuperf
