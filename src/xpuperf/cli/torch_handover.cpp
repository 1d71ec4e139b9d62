#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "xpuperf/cli/commands.h"
#include "xpuperf/cli/torch_entry.h"
#include "xpuperf/core/process.h"

namespace xpuperf::cli {
namespace {

const TorchEntry*& entry_slot() {
  static const TorchEntry* entry = nullptr;
  return entry;
}

}  // namespace

const TorchEntry* torch_entry() {
  return entry_slot();
}

bool set_torch_entry(const TorchEntry* entry) {
  entry_slot() = entry;
  return true;
}

void hand_over_to_torch(const std::vector<std::string>& argv) {
  if (torch_entry()) return;
  const std::string binary = torch_binary();
  if (binary.empty()) return;
  std::vector<char*> args;
  args.push_back(const_cast<char*>(binary.c_str()));
  for (std::size_t i = 1; i < argv.size(); ++i) args.push_back(const_cast<char*>(argv[i].c_str()));
  args.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  ::execv(binary.c_str(), args.data());
  throw CommandError("cannot run " + binary + " (the LibTorch half of xpuperf): " + std::strerror(errno) +
                     "; rebuild it (make build)");
}

std::string without_torch(const std::string& what) {
  return "this xpuperf has no xpuperf-torch beside it (built without LibTorch, or copied alone), so it cannot " + what +
         ": install libtorch-dev and libgloo-dev (scripts/install-deps.sh does) and rebuild, or keep xpuperf-torch "
         "in the same folder";
}

}  // namespace xpuperf::cli
