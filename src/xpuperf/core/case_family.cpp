#include "xpuperf/core/case_family.h"

#include "xpuperf/core/base_config.h"
#include "xpuperf/core/inference_config.h"
#include "xpuperf/core/operation_config.h"
#include "xpuperf/core/plan.h"

namespace xpuperf {
namespace {

std::vector<std::string> with_sets(std::vector<std::string> argv, const std::vector<std::string>& sets) {
  for (const auto& set : sets) argv.insert(argv.end(), {"--set", set});
  return argv;
}

class TrainingFamily : public CaseFamily {
 public:
  const char* name() const override { return "training"; }
  bool owns(const CaseKey& key) const override {
    return !is_base_key(key) && !is_inference_key(key) && !is_operation_key(key);
  }
  std::string key_text(const CaseKey& key) const override { return key.str(); }
  std::optional<Config> load_config(const Repo& repo, const CaseKey& key, const CaseConfigRequest& request,
                                    Diagnostics& diags) const override {
    TrainingConfigRequest r;
    r.key = key;
    r.vendor = request.vendor;
    r.data_dir = request.data_dir;
    r.where = request.where;
    r.vendor_where = request.vendor_where;
    r.data_dir_where = request.where;
    r.sets = parse_set_overrides(request.sets, diags, request.sets_where);
    return load_training_config(repo, r, diags);
  }
  std::vector<std::string> rank_argv(const CaseKey& key, const RankCommand& c) const override {
    return with_sets({"/proc/self/exe", "--root", c.root, "train", "--case", key.model, "--framework", key.framework,
                      "--vendor", c.vendor, "--hardware", key.hardware, "--nnodes", std::to_string(key.nnodes),
                      "--nproc", std::to_string(key.nproc), "--data-dir", c.data_dir},
                     c.sets);
  }
  bool reads_data_dir() const override { return true; }
  std::string vendor_config_dir(const Repo& repo, const std::string& vendor, const CaseKey& key) const override {
    return repo.vendor_dir(vendor) + "/training/" + key.model + "-" + key.framework + "/config";
  }
};

class InferenceFamily : public CaseFamily {
 public:
  const char* name() const override { return "inference"; }
  bool owns(const CaseKey& key) const override { return is_inference_key(key); }
  std::string key_text(const CaseKey& key) const override { return inference_key_text(key); }
  std::optional<Config> load_config(const Repo& repo, const CaseKey& key, const CaseConfigRequest& request,
                                    Diagnostics& diags) const override {
    auto config = load_inference_config(repo, key.model, request.vendor, request.where, plan_keys(), diags);
    if (config &&
        !apply_inference_overrides(*config, parse_set_overrides(request.sets, diags, request.sets_where), diags))
      config.reset();
    return config;
  }
  std::vector<std::string> rank_argv(const CaseKey& key, const RankCommand& c) const override {
    return with_sets({"/proc/self/exe", "--root", c.root, "infer", "--case", key.model, "--framework",
                      inference_framework(key), "--vendor", c.vendor, "--hardware", key.hardware, "--out", c.out_dir},
                     c.sets);
  }
};

class BaseFamily : public CaseFamily {
 public:
  const char* name() const override { return "base"; }
  bool owns(const CaseKey& key) const override { return is_base_key(key); }
  std::string key_text(const CaseKey& key) const override { return base_key_text(key); }
  std::optional<Config> load_config(const Repo& repo, const CaseKey& key, const CaseConfigRequest& request,
                                    Diagnostics& diags) const override {
    return load_base_config(
        repo, {key.model, request.vendor, parse_set_overrides(request.sets, diags, request.sets_where), request.where},
        diags);
  }
  std::vector<std::string> rank_argv(const CaseKey& key, const RankCommand& c) const override {
    return with_sets(
        {"/proc/self/exe", "--root", c.root, "base", key.model, "--vendor", c.vendor, "--hardware", key.hardware},
        c.sets);
  }
  bool sees_every_device(const Config& config) const override { return config.get_bool("whole_host", false); }
};

// An operator case: one process on the first host (a collective: its key's ranks). Its rounds keep an inaccurate row
// (the report gives the verdict and voids its speed-up) rather than failing: what was measured is not lost.
class OperationFamily : public CaseFamily {
 public:
  const char* name() const override { return "operation"; }
  bool owns(const CaseKey& key) const override { return is_operation_key(key); }
  std::string key_text(const CaseKey& key) const override { return operation_key_text(key); }
  std::optional<Config> load_config(const Repo& repo, const CaseKey& key, const CaseConfigRequest& request,
                                    Diagnostics& diags) const override {
    return load_operation_config(repo, key.model, parse_set_overrides(request.sets, diags, request.sets_where),
                                 request.where, diags);
  }
  std::vector<std::string> rank_argv(const CaseKey& key, const RankCommand& c) const override {
    return with_sets({"/proc/self/exe", "--root", c.root, "op", "--case", key.model, "--vendor", c.vendor, "--hardware",
                      key.hardware, "--inaccurate-ok"},
                     c.sets);
  }
};

}  // namespace

const CaseFamily& case_family(const CaseKey& key) {
  static const BaseFamily base;
  static const InferenceFamily inference;
  static const OperationFamily operation;
  static const TrainingFamily training;
  if (base.owns(key)) return base;
  if (operation.owns(key)) return operation;
  if (inference.owns(key)) return inference;
  return training;
}

}  // namespace xpuperf
