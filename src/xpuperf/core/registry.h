#pragma once
// Self-registration by name, for everything added as a folder or a file: training and inference
// cases, engines, base benchmarks. A registrar runs at static initialisation (build such code
// as an OBJECT library so that the linker keeps it).

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace xpuperf {

template <typename T>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<T>()>;

  // The one registry of T (a function-local static: registrars may run in any order).
  static Registry& instance() {
    static Registry r;
    return r;
  }
  bool add(const std::string& key, Factory factory) {
    factories_[key] = std::move(factory);
    return true;
  }
  // A new T, or nullptr when nothing is registered under `key`.
  std::unique_ptr<T> make(const std::string& key) const {
    const auto it = factories_.find(key);
    return it == factories_.end() ? nullptr : it->second();
  }
  std::vector<std::string> keys() const {  // sorted
    std::vector<std::string> out;
    for (const auto& entry : factories_) out.push_back(entry.first);
    return out;
  }

 private:
  std::map<std::string, Factory> factories_;
};

}  // namespace xpuperf
