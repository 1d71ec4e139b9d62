#pragma once
// What a result was measured on: sys_info.json in every node folder.

#include <nlohmann/json.hpp>

namespace xpuperf {

// Host name, OS, kernel, CPU model and cores, memory, and this xpuperf's version and build.
nlohmann::json collect_sys_info();

}  // namespace xpuperf
