// xpuperf-torch's half of the commands (cli/torch_entry.h): linked into xpuperf-torch only.

#include "xpuperf/cli/torch_entry.h"

namespace xpuperf::cli {
namespace {

#ifdef XPUPERF_HAVE_INFER
const TorchEntry kEntry{&train::run_rank, &infer::run_inference};
#else
const TorchEntry kEntry{&train::run_rank, nullptr};
#endif

const bool entry_set = set_torch_entry(&kEntry);

}  // namespace
}  // namespace xpuperf::cli
