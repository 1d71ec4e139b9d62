#include "xpuperf/core/specs.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "xpuperf/core/config.h"

namespace xpuperf {

YAML::Node chip_specs(const Repo& repo, const std::string& vendor, const std::string& hardware) {
  Diagnostics ignored;
  const auto specs = load_config_file(repo.vendor_dir(vendor) + "/specs.yaml", ignored);
  if (!specs || !specs->has("chips") || hardware.empty()) return YAML::Node();
  const YAML::Node chip = specs->at("chips").value[hardware];
  return chip && chip.IsMap() ? YAML::Clone(chip) : YAML::Node();
}

namespace {

// The number at parts[i..] below `node`; found by iterating, since looking a missing key up
// yields a node that throws when used.
double figure_at(const YAML::Node& node, const std::vector<std::string>& parts, std::size_t i) {
  if (i == parts.size()) {
    if (!node.IsScalar()) return 0;
    try {
      return std::max(0.0, node.as<double>());
    } catch (const YAML::Exception&) {
      return 0;
    }
  }
  if (!node.IsMap()) return 0;
  for (const auto& kv : node)
    if (kv.first.Scalar() == parts[i]) return figure_at(kv.second, parts, i + 1);
  return 0;
}

}  // namespace

double chip_figure(const YAML::Node& chip, const std::string& path) {
  if (!chip || path.empty()) return 0;
  std::vector<std::string> parts;
  std::istringstream in(path);
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part);
  return figure_at(chip, parts, 0);
}

}  // namespace xpuperf
