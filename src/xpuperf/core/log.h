#pragma once
// The log facade: no third-party includes, so LibTorch code can log too (PyTorch 2.x ships its
// own fmt, which clashes with spdlog's). Messages go to stderr, and to a file once one is set.

#include <string>

namespace xpuperf::log {

enum class Level { Debug, Info, Warning, Error };

// "debug", "info", "warning" (or "warn"), "error"; false when the name is none of these.
bool parse_level(const std::string& name, Level& level);
void set_level(Level level);
// Also write every message to `path` (appended), e.g. the run's xpuperf_run.log.
void add_file(const std::string& path);
// Only messages at or above `level` reach stderr (files still get every message at the level).
void set_console_level(Level level);

void debug(const std::string& message);
void info(const std::string& message);
void warning(const std::string& message);
void error(const std::string& message);

}  // namespace xpuperf::log
