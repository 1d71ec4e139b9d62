#include "xpuperf/core/log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace xpuperf::log {

namespace {

std::shared_ptr<spdlog::sinks::sink>& console_sink() {
  static std::shared_ptr<spdlog::sinks::sink> sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  return sink;
}

std::shared_ptr<spdlog::logger>& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto l = std::make_shared<spdlog::logger>("xpuperf", console_sink());
    l->set_pattern("%Y-%m-%d %H:%M:%S.%e [%^%l%$] %v");
    l->set_level(spdlog::level::info);
    l->flush_on(spdlog::level::info);
    return l;
  }();
  return instance;
}

spdlog::level::level_enum to_spdlog(Level level) {
  switch (level) {
    case Level::Debug:
      return spdlog::level::debug;
    case Level::Info:
      return spdlog::level::info;
    case Level::Warning:
      return spdlog::level::warn;
    case Level::Error:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

}  // namespace

bool parse_level(const std::string& name, Level& level) {
  if (name == "debug")
    level = Level::Debug;
  else if (name == "info")
    level = Level::Info;
  else if (name == "warning" || name == "warn")
    level = Level::Warning;
  else if (name == "error")
    level = Level::Error;
  else
    return false;
  return true;
}

void set_level(Level level) {
  logger()->set_level(to_spdlog(level));
}

void set_console_level(Level level) {
  console_sink()->set_level(to_spdlog(level));
}

void add_file(const std::string& path) {
  auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, false);
  sink->set_pattern("%Y-%m-%d %H:%M:%S.%e [%l] %v");
  logger()->sinks().push_back(sink);
}

void debug(const std::string& message) {
  logger()->debug(message);
}
void info(const std::string& message) {
  logger()->info(message);
}
void warning(const std::string& message) {
  logger()->warn(message);
}
void error(const std::string& message) {
  logger()->error(message);
}

}  // namespace xpuperf::log
