#include "xpuperf/core/vendor_choices.h"

#include <map>
#include <mutex>

namespace xpuperf {
namespace {

struct Choices {
  std::mutex mutex;
  std::map<std::string, std::set<std::string>> by_key;
};

// A function-local static: registrars run at static initialisation, in any order.
Choices& choices() {
  static Choices c;
  return c;
}

}  // namespace

bool register_vendor_choice(const std::string& key, const std::string& value) {
  const std::lock_guard<std::mutex> lock(choices().mutex);
  choices().by_key[key].insert(value);
  return true;
}

std::set<std::string> vendor_choices(const std::string& key) {
  const std::lock_guard<std::mutex> lock(choices().mutex);
  const auto it = choices().by_key.find(key);
  return it == choices().by_key.end() ? std::set<std::string>{} : it->second;
}

}  // namespace xpuperf
