#pragma once
// Reading a JSON-lines file a user brings (fine-tuning texts, ReCoRD), one value a line.

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace xpuperf::text {

// Calls `each` with every non-blank line's value and where it is ("PATH: line N"). TokenizerError
// naming the file where it cannot be read, and the line where one is not JSON; `format` (what the
// file should hold) ends those messages.
void for_each_json_line(const std::string& path, const std::string& format,
                        const std::function<void(const nlohmann::json& value, const std::string& where)>& each);

}  // namespace xpuperf::text
