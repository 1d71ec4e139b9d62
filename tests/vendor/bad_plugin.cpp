// Plug-ins that are wrong in one way each (BAD_* below, one per library built from this file), for
// the tests that a bad plug-in stops the run with a message naming the file and the fix.

#if defined(BAD_TORCH_VERSION)
#define XPUPERF_PLUGIN_TORCH_VERSION "0.9.0"
#endif

#include <stdexcept>

#include "xpuperf/torchrt/vendor_plugin_api.h"

namespace {

[[maybe_unused]] void init(xpuperf::torchrt::Registrar& registrar) {
#if defined(BAD_INIT_THROWS)
  (void)registrar;
  throw std::runtime_error("no device found: is the driver loaded?");
#elif defined(BAD_WRONG_DEVICE)
  registrar.device("other");
#else
  registrar.device("bad");
#endif
}

}  // namespace

#if defined(BAD_UNDEFINED_SYMBOL)
// A function the loading binary does not have: what a plug-in built against another LibTorch or
// another xpuperf meets.
void xpuperf_function_from_another_version();
extern "C" __attribute__((visibility("default"))) void bad_plugin_uses_it() {
  xpuperf_function_from_another_version();
}
XPUPERF_VENDOR_PLUGIN("bad", "0", init)
#elif defined(BAD_NO_ENTRY)
extern "C" __attribute__((visibility("default"))) int not_a_plugin() {
  return 0;
}
#elif defined(BAD_INTERFACE_V2)
extern "C" __attribute__((visibility("default"))) const void* xpuperf_vendor_plugin_v2() {
  return nullptr;
}
#else
XPUPERF_VENDOR_PLUGIN("bad", "0", init)
#endif
