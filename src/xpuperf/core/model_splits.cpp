#include "xpuperf/core/model_splits.h"

#include <map>

namespace xpuperf {
namespace {

// A function-local static: registrars run at static initialisation, in any order.
std::map<std::string, ModelSplits>& declared() {
  static std::map<std::string, ModelSplits> splits;
  return splits;
}

}  // namespace

bool register_model_splits(const std::string& model, const std::string& framework, ModelSplits splits) {
  declared()[model + ":" + framework] = std::move(splits);
  return true;
}

const ModelSplits* model_splits(const std::string& model, const std::string& framework) {
  const auto it = declared().find(model + ":" + framework);
  return it == declared().end() ? nullptr : &it->second;
}

}  // namespace xpuperf
