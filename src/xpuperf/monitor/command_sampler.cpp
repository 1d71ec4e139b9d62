#include <filesystem>
#include <regex>

#include "xpuperf/core/config.h"
#include "xpuperf/monitor/sampler.h"

namespace xpuperf::monitor {

CommandSampler::CommandSampler(std::vector<std::string> command, std::vector<Metric> metrics, double limit_s)
    : command_(std::move(command)), metrics_(std::move(metrics)), limit_s_(limit_s) {}

std::vector<Sample> CommandSampler::parse(const std::string& text, const std::vector<Metric>& metrics) {
  std::vector<Sample> out;
  for (const auto& m : metrics) {
    const std::regex pattern(m.regex);
    int n = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator(); ++it, ++n) {
      if (it->size() < 2) continue;
      char* end = nullptr;
      const std::string value = (*it)[1].str();
      const double v = std::strtod(value.c_str(), &end);
      if (end == value.c_str()) continue;
      std::string device = m.device;
      if (const auto at = device.find("{n}"); at != std::string::npos) device.replace(at, 3, std::to_string(n));
      out.push_back({device, m.metric, v});
      if (m.device.find("{n}") == std::string::npos) break;  // one value unless numbered
    }
  }
  return out;
}

std::vector<Sample> CommandSampler::sample() {
  const auto text = command_output(command_, limit_s_);
  return text ? parse(*text, metrics_) : std::vector<Sample>{};
}

std::unique_ptr<Sampler> load_command_sampler(const std::string& path, std::string& error) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return nullptr;
  Diagnostics diags;
  const auto config = load_config_file(path, diags);
  try {
    if (!config) throw ConfigError(diags.format(Severity::Error));
    const auto command = config->get_string_list("command");
    if (command.empty()) throw ConfigError(path + ": 'command' must not be empty");
    std::vector<CommandSampler::Metric> metrics;
    const ConfigEntry& entry = config->at("metrics");
    if (!entry.value.IsSequence()) throw ConfigError(entry.source.str() + ": 'metrics' must be a list");
    for (const auto& item : entry.value) {
      CommandSampler::Metric m{item["device"].as<std::string>(""), item["metric"].as<std::string>(""),
                               item["regex"].as<std::string>("")};
      if (m.device.empty() || m.metric.empty() || m.regex.empty())
        throw ConfigError(path + ":" + std::to_string(item.Mark().line + 1) +
                          ": a metric needs device, metric and regex");
      try {
        std::regex check(m.regex);
      } catch (const std::regex_error& e) {
        throw ConfigError(path + ":" + std::to_string(item.Mark().line + 1) + ": bad regex '" + m.regex +
                          "': " + e.what());
      }
      metrics.push_back(m);
    }
    return std::make_unique<CommandSampler>(command, metrics);
  } catch (const ConfigError& e) {
    error = e.what();
  } catch (const YAML::Exception& e) {
    error = path + ": " + e.what();
  }
  return nullptr;
}

}  // namespace xpuperf::monitor
