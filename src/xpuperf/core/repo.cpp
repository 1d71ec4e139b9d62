#include "xpuperf/core/repo.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "xpuperf/core/config.h"
#include "xpuperf/core/version.h"

namespace xpuperf {
namespace fs = std::filesystem;

namespace {

bool is_content_root(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir / "cases", ec) && fs::is_directory(dir / "vendors", ec);
}

}  // namespace

Repo::Repo(std::string root) : root_(std::move(root)) {}

std::optional<Repo> Repo::discover(const std::string& explicit_root, const std::string& start) {
  if (!explicit_root.empty()) return Repo(explicit_root);
  if (const char* env = std::getenv("XPUPERF_ROOT"); env && *env) return Repo(env);
  std::error_code ec;
  fs::path dir = start.empty() ? fs::current_path(ec) : fs::absolute(start, ec);
  for (; !dir.empty(); dir = dir.parent_path()) {
    if (is_content_root(dir)) return Repo(display_path(dir.string()));
    if (dir == dir.root_path()) break;
  }
  if (is_content_root(kSourceDir)) return Repo(kSourceDir);
  return std::nullopt;
}

std::string Repo::path(const std::string& relative) const {
  if (root_.empty() || root_ == ".") return relative;
  return (fs::path(root_) / relative).string();
}

std::string Repo::training_case_dir(const std::string& model, const std::string& framework) const {
  return path("cases/training/" + model + "/" + framework);
}
std::string Repo::training_base_config(const std::string& model, const std::string& framework) const {
  return training_case_dir(model, framework) + "/config/_base.yaml";
}
std::string Repo::training_mutable_params(const std::string& model, const std::string& framework) const {
  return training_case_dir(model, framework) + "/config/mutable_params.yaml";
}
std::string Repo::training_model_splits(const std::string& model, const std::string& framework) const {
  return training_case_dir(model, framework) + "/model_splits.yaml";
}
std::string Repo::vendor_dir(const std::string& vendor) const {
  return path("vendors/" + vendor);
}
std::string Repo::vendor_training_config_dir(const std::string& vendor, const std::string& model,
                                             const std::string& framework) const {
  return vendor_dir(vendor) + "/training/" + model + "-" + framework + "/config";
}
std::string Repo::vendor_training_config(const std::string& vendor, const CaseKey& key) const {
  return vendor_training_config_dir(vendor, key.model, key.framework) + "/config_" + key.config_name() + ".yaml";
}
std::string Repo::inference_case_dir(const std::string& name) const {
  return path("cases/inference/" + name);
}
std::string Repo::base_case_dir(const std::string& metric) const {
  return path("cases/base/" + metric);
}
std::string Repo::base_config(const std::string& metric) const {
  return base_case_dir(metric) + "/config.yaml";
}
std::string Repo::operation_config(const std::string& op) const {
  return path("cases/operation/" + op + "/config.yaml");
}
std::string Repo::vendor_base_config(const std::string& vendor, const std::string& metric) const {
  return vendor_dir(vendor) + "/base/" + metric + ".yaml";
}
std::string Repo::vendor_inference_config(const std::string& vendor, const std::string& name) const {
  return vendor_dir(vendor) + "/inference/" + name + "_configurations.yaml";
}

std::vector<std::string> list_subdirs(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_directory(ec)) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string join_or_none(const std::vector<std::string>& items) {
  if (items.empty()) return "none";
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::vector<std::string> Repo::training_models() const {
  return list_subdirs(path("cases/training"));
}
std::vector<std::string> Repo::training_frameworks(const std::string& model) const {
  return list_subdirs(path("cases/training/" + model));
}
std::vector<std::string> Repo::inference_cases() const {
  return list_subdirs(path("cases/inference"));
}
std::vector<std::string> Repo::base_metrics() const {
  return list_subdirs(path("cases/base"));
}
std::vector<std::string> Repo::operation_cases() const {
  return list_subdirs(path("cases/operation"));
}
std::vector<std::string> Repo::vendors() const {
  return list_subdirs(path("vendors"));
}
std::vector<std::string> Repo::vendor_training_cases(const std::string& vendor) const {
  return list_subdirs(vendor_dir(vendor) + "/training");
}

std::vector<std::string> Repo::vendor_training_configs(const std::string& vendor, const std::string& model,
                                                       const std::string& framework) const {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(vendor_training_config_dir(vendor, model, framework), ec)) {
    const std::string file = entry.path().filename().string();
    const std::string prefix = "config_", suffix = ".yaml";
    if (file.size() > prefix.size() + suffix.size() && file.compare(0, prefix.size(), prefix) == 0 &&
        file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0)
      names.push_back(file.substr(prefix.size(), file.size() - prefix.size() - suffix.size()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace xpuperf
