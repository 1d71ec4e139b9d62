#pragma once
// The collective backends plug-ins registered, by name (distributed.cpp forms groups from them).

#include <string>
#include <vector>

#include "xpuperf/torchrt/collective_group.h"

namespace xpuperf::torchrt {

void register_collective_backend(const std::string& name, CollectiveFactory factory);
// Null when none is registered by that name.
const CollectiveFactory* find_collective_backend(const std::string& name);
std::vector<std::string> registered_collective_backends();

}  // namespace xpuperf::torchrt
