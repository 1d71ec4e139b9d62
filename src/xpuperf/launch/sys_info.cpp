#include "xpuperf/launch/sys_info.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "xpuperf/core/version.h"

namespace xpuperf {

namespace {

// The value after "key:" (or "key=") on the first line starting with `key` in a text file.
std::string field(const std::string& path, const std::string& key, char separator) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const auto at = line.find(separator);
    if (at == std::string::npos) continue;
    std::string value = line.substr(at + 1);
    value.erase(0, value.find_first_not_of(" \t\""));
    while (!value.empty() && (value.back() == '"' || value.back() == ' ')) value.pop_back();
    return value;
  }
  return "";
}

}  // namespace

nlohmann::json collect_sys_info() {
  utsname u{};
  ::uname(&u);
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const std::string mem_kb = field("/proc/meminfo", "MemTotal", ':');
  nlohmann::json info = {
      {"hostname", host},
      {"os", field("/etc/os-release", "PRETTY_NAME", '=')},
      {"kernel", std::string(u.sysname) + " " + u.release},
      {"machine", u.machine},
      {"cpu_model", field("/proc/cpuinfo", "model name", ':')},
      {"cpu_cores", std::thread::hardware_concurrency()},
      {"memory_bytes", mem_kb.empty() ? 0.0 : std::stod(mem_kb) * 1024.0},
      {"xpuperf_version", kVersion},
      {"xpuperf_git", kGitHash},
  };
  return info;
}

}  // namespace xpuperf
