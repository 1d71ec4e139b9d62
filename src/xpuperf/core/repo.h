#pragma once
// The content tree xpuperf reads: cases/ and vendors/ under one root folder. All knowledge of
// where a case's or a vendor's files live is here.

#include <optional>
#include <string>
#include <vector>

#include "xpuperf/core/case_key.h"

namespace xpuperf {

class Repo {
 public:
  explicit Repo(std::string root);

  // The root to use: `explicit_root` when given, else $XPUPERF_ROOT, else the first folder
  // holding cases/ and vendors/ at or above `start` (the working directory when empty), else
  // the source tree this binary was built from. Nothing when none of these has them.
  static std::optional<Repo> discover(const std::string& explicit_root = "", const std::string& start = "");

  const std::string& root() const { return root_; }

  std::string training_case_dir(const std::string& model, const std::string& framework) const;
  std::string training_base_config(const std::string& model, const std::string& framework) const;
  std::string training_mutable_params(const std::string& model, const std::string& framework) const;
  std::string training_model_splits(const std::string& model, const std::string& framework) const;
  std::string vendor_dir(const std::string& vendor) const;
  std::string vendor_training_config_dir(const std::string& vendor, const std::string& model,
                                         const std::string& framework) const;
  std::string vendor_training_config(const std::string& vendor, const CaseKey& key) const;
  std::string inference_case_dir(const std::string& name) const;
  std::string base_case_dir(const std::string& metric) const;
  std::string base_config(const std::string& metric) const;
  std::string operation_config(const std::string& op) const;  // cases/operation/<op>/config.yaml
  std::string vendor_base_config(const std::string& vendor, const std::string& metric) const;
  std::string vendor_inference_config(const std::string& vendor, const std::string& name) const;

  std::vector<std::string> training_models() const;
  std::vector<std::string> training_frameworks(const std::string& model) const;
  std::vector<std::string> inference_cases() const;
  std::vector<std::string> base_metrics() const;
  std::vector<std::string> operation_cases() const;
  std::vector<std::string> vendors() const;
  // Hardware configs a vendor has for one case: "CPUx1x1", "H100x1x8", ...
  std::vector<std::string> vendor_training_configs(const std::string& vendor, const std::string& model,
                                                   const std::string& framework) const;
  // The "<model>-<framework>" folders under vendors/<vendor>/training.
  std::vector<std::string> vendor_training_cases(const std::string& vendor) const;

 private:
  std::string path(const std::string& relative) const;

  std::string root_;
};

// Sorted names of the sub-folders of `dir` (empty when it does not exist).
std::vector<std::string> list_subdirs(const std::string& dir);
// A comma-separated list for messages, or "none".
std::string join_or_none(const std::vector<std::string>& items);

}  // namespace xpuperf
