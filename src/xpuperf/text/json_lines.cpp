#include "xpuperf/text/json_lines.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "xpuperf/text/tokenizer_error.h"

namespace xpuperf::text {

void for_each_json_line(const std::string& path, const std::string& format,
                        const std::function<void(const nlohmann::json& value, const std::string& where)>& each) {
  std::ifstream in(path);
  if (!in) throw TokenizerError(path + ": cannot be read (" + format + ")");
  std::string line;
  std::int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ": line " + std::to_string(number);
    nlohmann::json value;
    try {
      value = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      throw TokenizerError(where + " is not JSON (" + format + ")");
    }
    each(value, where);
  }
}

}  // namespace xpuperf::text
