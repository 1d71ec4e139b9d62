#include "xpuperf/core/plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>

#include "xpuperf/core/base_config.h"
#include "xpuperf/core/case_family.h"
#include "xpuperf/core/inference_config.h"
#include "xpuperf/core/operation_config.h"
#include "xpuperf/core/strings.h"
#include "xpuperf/core/training_config.h"
#include "xpuperf/core/vendor_spec.h"

namespace xpuperf {
namespace fs = std::filesystem;

const std::vector<std::string>& plan_keys() {
  static const std::vector<std::string> keys = {
      "vendor",          "log_dir",     "log_level",           "hosts",     "ssh",          "launcher",
      "slurm_partition", "master_port", "visible_devices_env", "shm_size",  "clear_caches", "case_time_limit",
      "monitor_period",  "history_db",  "deploy_path",         "container", "cases",        "base",
      "inference",       "operation"};
  return keys;
}

bool is_valid_host(const std::string& host) {
  static const std::regex name(
      R"([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*)");
  static const std::regex ipv6(R"([0-9A-Fa-f:]*:[0-9A-Fa-f:.]*)");
  return host.size() <= 253 && (std::regex_match(host, name) || std::regex_match(host, ipv6));
}

bool is_local_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::optional<double> parse_duration(const std::string& text) {
  // [0-9]+(\.[0-9]+)? spaces? (s|m|h|d)?, scanned by hand: std::regex recursed once a character
  // and a 100,000-character value overflowed the stack.
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t from = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    return i - from;
  };
  if (digits() == 0) return std::nullopt;
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (digits() == 0) return std::nullopt;
  }
  const std::size_t number_end = i;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  const std::string unit = text.substr(i);
  if (!unit.empty() && unit != "s" && unit != "m" && unit != "h" && unit != "d") return std::nullopt;
  double value = std::strtod(text.substr(0, number_end).c_str(), nullptr);
  if (unit == "m") value *= 60;
  if (unit == "h") value *= 3600;
  if (unit == "d") value *= 86400;
  if (!(value > 0) || !std::isfinite(value)) return std::nullopt;
  return value;
}

// [0-9]+[bkmgBKMG]?: a size as docker's and podman's --shm-size take it.
bool is_size_text(const std::string& text) {
  const std::size_t digits = text.find_first_not_of("0123456789");
  if (digits == 0 || text.empty()) return false;
  return digits == std::string::npos ||
         (digits + 1 == text.size() && std::string("bkmgBKMG").find(text.back()) != std::string::npos);
}

bool is_variable_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (const char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

namespace {

// Reads plan values into typed fields, reporting each problem at its line.
class PlanReader {
 public:
  PlanReader(const Config& raw, Diagnostics& diags) : raw_(raw), diags_(diags) {}

  void string(const std::string& key, std::string& out, bool required = false) {
    const ConfigEntry* e = entry(key, required);
    if (!e) return;
    const ValueKind kind = value_kind(e->value);
    if (kind == ValueKind::List || kind == ValueKind::Map || kind == ValueKind::Null) {
      wrong(key, *e, "a string");
      return;
    }
    out = e->value.Scalar();
    if (required && out.empty()) diags_.error(e->source, "'" + key + "' must not be empty");
  }

  void integer(const std::string& key, int& out, int lo, int hi) {
    const ConfigEntry* e = entry(key, false);
    if (!e) return;
    try {
      const auto v = raw_.get_int(key);
      if (v < lo || v > hi) {
        diags_.error(e->source, "'" + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                                    ", got " + std::to_string(v));
        return;
      }
      out = static_cast<int>(v);
    } catch (const ConfigError&) {
      wrong(key, *e, "an integer");
    }
  }

  void boolean(const std::string& key, bool& out) {
    const ConfigEntry* e = entry(key, false);
    if (!e) return;
    if (value_kind(e->value) != ValueKind::Bool) return wrong(key, *e, "true or false");
    out = raw_.get_bool(key);
  }

  void choice(const std::string& key, std::string& out, const std::vector<std::string>& allowed) {
    const ConfigEntry* e = entry(key, false);
    if (!e) return;
    std::string value;
    string(key, value);
    if (value.empty()) return;
    if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
      diags_.error(e->source, "'" + key + "' must be one of " + join_or_none(allowed) + ", got '" + value + "'");
      return;
    }
    out = value;
  }

  const ConfigEntry* entry(const std::string& key, bool required) {
    const ConfigEntry* e = raw_.find(key);
    if (!e && required) diags_.error({raw_.origin(), 0}, "missing required key '" + key + "'");
    return e;
  }

  void wrong(const std::string& key, const ConfigEntry& e, const char* expected) {
    diags_.error(e.source, "'" + key + "' must be " + expected + ", got " + quoted_value_text(e.value));
  }

 private:
  const Config& raw_;
  Diagnostics& diags_;
};

Source line_of(const YAML::Node& node, const std::string& file) {
  return {file, node.Mark().line + 1};
}

void read_hosts(const Config& raw, Plan& plan, Diagnostics& diags) {
  const ConfigEntry* e = raw.find("hosts");
  if (!e) return;
  if (!e->value.IsSequence() || e->value.size() == 0) {
    diags.error(e->source, "'hosts' must be a non-empty list of host names", "e.g. hosts: [10.1.2.3, 10.1.2.4]");
    return;
  }
  plan.hosts.clear();
  std::set<std::string> seen;
  for (const auto& item : e->value) {
    const Source where = line_of(item, e->source.file);
    if (!item.IsScalar()) {
      diags.error(where, "each host must be a name or an address");
      continue;
    }
    const std::string host = item.Scalar();
    if (!is_valid_host(host)) {
      diags.error(where, "'" + host + "' is not a valid host name or address",
                  "use a DNS name or an IP address (letters, digits, '.', '-', ':')");
      continue;
    }
    if (!seen.insert(host).second) diags.error(where, "host '" + host + "' is listed twice");
    plan.hosts.push_back(host);
  }
}

// A map-valued plan key (ssh, container) as a small config of its own, with lines of its own;
// nothing when it is not a map. Unknown keys are errors naming `name.key`.
std::optional<Config> read_section(const ConfigEntry* e, const std::string& name,
                                   const std::vector<std::string>& allowed, const std::string& example,
                                   Diagnostics& diags) {
  if (!e) return std::nullopt;
  if (!e->value.IsMap()) {
    diags.error(e->source, "'" + name + "' must be a map", "e.g. " + example);
    return std::nullopt;
  }
  Config section(e->source.file);
  for (const auto& kv : e->value) section.set(kv.first.Scalar(), kv.second, line_of(kv.first, e->source.file));
  for (const auto& key : section.keys()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      const std::string near = closest_match(key, allowed);
      diags.error(section.at(key).source, "unknown key '" + name + "." + key + "'",
                  (near.empty() ? "" : "did you mean '" + near + "'? ") + name + " keys: " + join_or_none(allowed));
    }
  }
  return section;
}

void read_ssh(const ConfigEntry* e, Plan& plan, Diagnostics& diags) {
  const auto section = read_section(e, "ssh", {"port", "user", "known_hosts", "identity_file", "connect_timeout"},
                                    "ssh: {port: 22, user: root}", diags);
  if (!section) return;
  const Config& ssh = *section;
  PlanReader r(ssh, diags);
  r.integer("port", plan.ssh.port, 1, 65535);
  r.string("user", plan.ssh.user);
  r.string("known_hosts", plan.ssh.known_hosts);
  r.string("identity_file", plan.ssh.identity_file);
  r.integer("connect_timeout", plan.ssh.connect_timeout_s, 1, 600);
  if (!plan.ssh.user.empty() && !is_safe_name(plan.ssh.user))
    diags.error(ssh.at("user").source, "'" + printable(plan.ssh.user) + "' is not a valid user name");
}

// A list of strings (each a scalar) at `key` of a section config.
void string_list(const Config& section, const std::string& key, std::vector<std::string>& out,
                 const std::string& example, Diagnostics& diags) {
  const ConfigEntry* e = section.find(key);
  if (!e) return;
  bool ok = e->value.IsSequence();
  if (ok)
    for (const auto& item : e->value) ok = ok && item.IsScalar();
  if (!ok) {
    diags.error(e->source, "'container." + key + "' must be a list of strings", "e.g. " + example);
    return;
  }
  out.clear();
  for (const auto& item : e->value) out.push_back(item.Scalar());
}

void read_container(const ConfigEntry* e, Plan& plan, Diagnostics& diags) {
  const auto config =
      read_section(e, "container", {"engine", "image", "build", "run_options", "mounts", "env", "privileged"},
                   "container: {engine: podman, run_options: [--gpus, all]}", diags);
  if (!config) return;
  const Config& section = *config;
  ContainerSettings& c = plan.container;
  PlanReader r(section, diags);
  r.choice("engine", c.engine, {"none", "docker", "podman"});
  r.string("image", c.image);
  static const std::regex image_name(R"([a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9._-]+)?(@sha256:[0-9a-f]{64})?)");
  // A reference is at most 255 characters of name, 128 of tag and a digest; checking the length
  // first keeps std::regex (one stack frame a character) off an unbounded value.
  if (c.image.size() > 512)
    diags.error(section.at("image").source, "the image name is " + std::to_string(c.image.size()) + " characters long",
                "an image reference has at most 255 characters of name and 128 of tag");
  else if (!c.image.empty() && !std::regex_match(c.image, image_name))
    diags.error(section.at("image").source, "'" + printable(c.image) + "' is not an image name",
                "e.g. xpuperf-nvidia:latest or registry.example.com/team/image:tag");
  r.boolean("build", c.build);
  r.boolean("privileged", c.privileged);
  string_list(section, "run_options", c.run_options, "run_options: [--gpus, all]", diags);
  string_list(section, "mounts", c.mounts, "mounts: [/data:/data:ro]", diags);
  for (const auto& m : c.mounts)
    if (m.find(':') == std::string::npos || m[0] != '/')
      diags.error(section.at("mounts").source,
                  "mount '" + printable(m) + "' must be /host/path:/container/path[:options]");
  if (const ConfigEntry* env = section.find("env")) {
    if (!env->value.IsMap()) {
      diags.error(env->source, "'container.env' must map variable names to values", "e.g. env: {NCCL_DEBUG: INFO}");
    } else {
      for (const auto& kv : env->value) {
        const std::string name = kv.first.Scalar();
        if (!is_variable_name(name) || !kv.second.IsScalar())
          diags.error(line_of(kv.first, env->source.file),
                      "container.env: '" + printable(name) + "' must be a variable name with a scalar value");
        else
          c.env.emplace_back(name, kv.second.Scalar());
      }
    }
  }
  if (!c.enabled() && section.keys().size() > (section.has("engine") ? 1u : 0u))
    diags.warning(e->source, "container settings are ignored with engine none",
                  "set container.engine: podman or docker");
}

void check_node_count(const Plan& plan, const CaseKey& key, const std::string& text, const Source& where,
                      Diagnostics& diags) {
  if (plan.launcher != "slurm" && key.nnodes > static_cast<int>(plan.hosts.size()))
    diags.error(where,
                "case '" + text + "' needs " + std::to_string(key.nnodes) + " nodes but the plan has " +
                    std::to_string(plan.hosts.size()) + " host" + (plan.hosts.size() == 1 ? "" : "s"),
                "add hosts, or lower nnodes");
}

// base: {"metric:hardware:nnodes:nproc:repeat": null or {key: value, ...}}, and the same for
// inference: {"case:framework:hardware:repeat": ...} and operation: {"op:hardware:repeat": ...}.
using KeyParser = std::optional<CaseKey> (*)(const std::string&, const Source&, Diagnostics&);
void read_keyed_section(const Config& raw, const std::string& section, KeyParser parse, const std::string& example,
                        Plan& plan, Diagnostics& diags) {
  const ConfigEntry* e = raw.find(section);
  if (!e) return;
  if (!e->value.IsMap()) {
    diags.error(e->source, "'" + section + "' must map case keys to overrides (or nothing)", "e.g. " + example);
    return;
  }
  std::set<std::string> seen;
  for (const auto& kv : e->value) {
    const Source where = line_of(kv.first, e->source.file);
    const std::string text = kv.first.Scalar();
    auto key = parse(text, where, diags);
    if (!key) continue;
    if (!seen.insert(key->str()).second) diags.error(where, "case '" + text + "' is listed twice");
    PlanCase c{*key, "", where, {}};
    if (kv.second.IsMap()) {
      for (const auto& o : kv.second) {
        if (!o.second.IsScalar() && !o.second.IsSequence()) {
          diags.error(where, "override '" + o.first.Scalar() + "' of case '" + text + "' must be a value or a list");
          continue;
        }
        YAML::Emitter flow;
        flow << YAML::Flow << o.second;
        c.sets.push_back(o.first.Scalar() + "=" + flow.c_str());
      }
    } else if (value_kind(kv.second) != ValueKind::Null) {
      diags.error(where, "case '" + text + "' takes a map of overrides or nothing, got " + quoted_value_text(kv.second),
                  "e.g. \"" + text + "\": {repeats: 3}");
      continue;
    }
    check_node_count(plan, *key, text, where, diags);
    plan.cases.push_back(c);
  }
}

void read_cases(const Config& raw, Plan& plan, Diagnostics& diags) {
  const ConfigEntry* e = raw.find("cases");
  if (!e) {
    if (!raw.has("base") && !raw.has("inference") && !raw.has("operation"))
      diags.error({raw.origin(), 0}, "missing required key 'cases' (or 'base', 'inference', 'operation')",
                  "add cases: {\"<model>:<framework>:<hardware>:<nnodes>:<nproc>:<repeat>\": <data dir>}");
    return;
  }
  if (!e->value.IsMap() || e->value.size() == 0) {
    diags.error(e->source, "'cases' must map case keys to data folders",
                "e.g. cases: {\"lenet5:libtorch:CPU:1:1:1\": /usr/share/datasets/fashion-mnist}");
    return;
  }
  std::set<std::string> seen;
  for (const auto& kv : e->value) {
    const Source where = line_of(kv.first, e->source.file);
    const std::string text = kv.first.Scalar();
    auto key = parse_case_key(text, where, diags);
    if (!key) continue;
    if (!seen.insert(key->str()).second) diags.error(where, "case '" + text + "' is listed twice");
    // A data folder, or a map of data_dir and overrides (--set of the round; a non-mutable one
    // is allowed but warned about: the results are then not the standard case's).
    PlanCase c{*key, "", where, {}};
    if (kv.second.IsMap()) {
      std::set<std::string> names;  // YAML keeps the last of two equal keys without a word
      for (const auto& o : kv.second) {
        const std::string name = o.first.Scalar();
        if (!names.insert(name).second) {
          diags.error(line_of(o.first, e->source.file),
                      "'" + name + "' is set twice in case '" + text + "'; the second would win unseen", "keep one");
          continue;
        }
        if (name == "data_dir" && o.second.IsScalar()) {
          c.data_dir = o.second.Scalar();
        } else if (o.second.IsScalar() || o.second.IsSequence()) {
          YAML::Emitter flow;
          flow << YAML::Flow << o.second;
          c.sets.push_back(name + "=" + flow.c_str());
        } else {
          diags.error(where, "override '" + name + "' of case '" + text + "' must be a value or a list");
        }
      }
    } else if (kv.second.IsScalar() && value_kind(kv.second) != ValueKind::Null) {
      c.data_dir = kv.second.Scalar();
    }
    if (c.data_dir.empty()) {
      diags.error(where, "case '" + text + "' needs a data folder",
                  "write \"" + text + "\": /path/to/data, or {data_dir: /path/to/data, max_steps: 30}");
      continue;
    }
    check_node_count(plan, *key, text, where, diags);
    plan.cases.push_back(c);
  }
}

}  // namespace

std::optional<Plan> read_plan_partially(const std::string& text, const std::string& name, Diagnostics& diags) {
  auto raw = load_config_text(text, name, diags);
  if (!raw) return std::nullopt;
  Plan plan;
  plan.file = name;
  plan.raw = *raw;

  for (const auto& key : raw->keys()) {
    if (std::find(plan_keys().begin(), plan_keys().end(), key) == plan_keys().end()) {
      const std::string near = closest_match(key, plan_keys());
      diags.error(raw->at(key).source, "unknown key '" + key + "'",
                  near.empty() ? "plan keys: " + join_or_none(plan_keys()) : "did you mean '" + near + "'?");
    }
  }

  PlanReader r(*raw, diags);
  r.string("vendor", plan.vendor, true);
  if (!plan.vendor.empty() && !is_safe_name(plan.vendor))
    diags.error(raw->at("vendor").source, "'" + printable(plan.vendor) + "' is not a valid vendor name");
  r.string("log_dir", plan.log_dir);
  r.choice("log_level", plan.log_level, {"debug", "info", "warning", "error"});
  read_hosts(*raw, plan, diags);
  read_ssh(raw->find("ssh"), plan, diags);
  const bool all_local = std::all_of(plan.hosts.begin(), plan.hosts.end(), is_local_host);
  // Several loopback "hosts" are node agents on this machine (a multi-node round simulated here).
  plan.launcher = all_local ? "local" : "ssh";
  r.choice("launcher", plan.launcher, {"local", "ssh", "slurm"});
  if (plan.launcher == "local" && !all_local)
    diags.error(raw->has("launcher") ? raw->at("launcher").source : Source{name, 0},
                "the local launcher runs on this machine only, but hosts are " + join_or_none(plan.hosts),
                "use launcher: ssh or slurm, or loopback hosts (localhost, 127.0.0.x)");
  r.string("slurm_partition", plan.slurm_partition);
  r.integer("master_port", plan.master_port, 1, 65535);
  r.string("visible_devices_env", plan.visible_devices_env);
  if (!is_variable_name(plan.visible_devices_env))
    diags.error(raw->at("visible_devices_env").source,
                "'" + printable(plan.visible_devices_env) + "' is not an environment variable name");
  r.string("shm_size", plan.shm_size);
  if (!is_size_text(plan.shm_size))
    diags.error(raw->at("shm_size").source,
                "'shm_size' must be a size like 32G or 512m, got '" + printable(plan.shm_size) + "'");
  r.boolean("clear_caches", plan.clear_caches);
  if (const ConfigEntry* e = raw->find("case_time_limit")) {
    const auto seconds = e->value.IsScalar() ? parse_duration(e->value.Scalar()) : std::nullopt;
    if (!seconds)
      diags.error(e->source,
                  "'case_time_limit' must be a duration like 3600, 90m, 2h or 1d, got " + quoted_value_text(e->value));
    else
      plan.case_time_limit_s = *seconds;
  }
  if (const ConfigEntry* e = raw->find("monitor_period")) {
    const auto seconds = e->value.IsScalar() ? parse_duration(e->value.Scalar()) : std::nullopt;
    if (!seconds || *seconds < 0.1)
      diags.error(e->source, "'monitor_period' must be a duration of at least 0.1 s, like 1 or 0.5s, got " +
                                 quoted_value_text(e->value));
    else
      plan.monitor_period_s = *seconds;
  }
  r.string("history_db", plan.history_db);
  r.string("deploy_path", plan.deploy_path);
  if (!plan.deploy_path.empty() && plan.deploy_path[0] != '/')
    diags.error(raw->at("deploy_path").source,
                "'deploy_path' must be an absolute path, got '" + plan.deploy_path + "'");
  read_container(raw->find("container"), plan, diags);
  read_keyed_section(*raw, "base", parse_base_key,
                     "base: {\"computation-FP32:CPU:1:1:1\": {cpu_size: 512}, \"main_memory-bandwidth:CPU:1:1:1\": }",
                     plan, diags);
  read_keyed_section(*raw, "operation", parse_operation_key,
                     "operation: {\"mm:H200:3\": {dtypes: [bf16]}, \"softmax:CPU:1\": }", plan, diags);
  read_cases(*raw, plan, diags);
  read_keyed_section(*raw, "inference", parse_inference_key,
                     "inference: {\"lenet5:libtorch:CPU:1\": {data_dir: /usr/share/datasets/fashion-mnist}}", plan,
                     diags);
  return plan;
}

std::optional<Plan> load_plan_text(const std::string& text, const std::string& name, Diagnostics& diags) {
  const int errors_before = diags.error_count();
  auto plan = read_plan_partially(text, name, diags);
  if (diags.error_count() != errors_before) return std::nullopt;
  return plan;
}

std::optional<Plan> load_plan(const std::string& path, Diagnostics& diags) {
  auto text = read_text_file(path, diags);
  if (!text) return std::nullopt;
  return load_plan_text(*text, display_path(path), diags);
}

void apply_vendor_defaults(Plan& plan, const Repo& repo, Diagnostics& diags) {
  if (plan.vendor.empty() || !fs::is_directory(repo.vendor_dir(plan.vendor))) return;  // check_plan says so
  const Source where = plan.raw.has("vendor") ? plan.raw.at("vendor").source : Source{plan.file, 0};
  try {
    const VendorSpec vendor = load_vendor_spec(repo, plan.vendor);
    if (!vendor.declared) return;
    if (!plan.raw.has("visible_devices_env") && !vendor.visible_devices_env.empty())
      plan.visible_devices_env = vendor.visible_devices_env;
    if (plan.container.enabled() && plan.container.run_options.empty())
      plan.container.run_options = vendor.container_device_options;
  } catch (const ConfigError& e) {
    diags.error(where, e.what());
  }
}

void check_plan(const Plan& plan, const Repo& repo, Diagnostics& diags) {
  std::error_code ec;
  if (plan.vendor.empty() || !is_safe_name(plan.vendor)) return;  // already reported by the reader
  const Source vendor_line = plan.raw.has("vendor") ? plan.raw.at("vendor").source : Source{plan.file, 0};
  if (!fs::is_directory(repo.vendor_dir(plan.vendor), ec)) {
    const auto vendors = repo.vendors();
    const std::string near = closest_match(plan.vendor, vendors);
    diags.error(vendor_line, "vendor folder " + repo.vendor_dir(plan.vendor) + " does not exist",
                (near.empty() ? "" : "did you mean '" + near + "'? ") + "vendors here: " + join_or_none(vendors));
    return;  // every case would fail the same way
  }
  if (plan.container.enabled() && plan.container.image.empty() &&
      !(plan.container.build && fs::exists(repo.vendor_dir(plan.vendor) + "/container/Dockerfile", ec)))
    diags.error(plan.raw.at("container").source,
                "the container needs an image: set container.image, or write the vendor's recipe " +
                    repo.vendor_dir(plan.vendor) + "/container/Dockerfile (built when it changes)");
  for (const auto& c : plan.cases) {
    const CaseFamily& family = case_family(c.key);
    family.load_config(repo, c.key, {plan.vendor, c.data_dir, c.sets, c.source, c.source, vendor_line}, diags);
    if (family.reads_data_dir() && plan.launcher == "local" && !fs::is_directory(c.data_dir, ec))
      diags.error(c.source, "data folder '" + c.data_dir + "' of case " + c.key.str() + " does not exist",
                  "create it, install the dataset, or point the case at the right folder");
  }
}

}  // namespace xpuperf
