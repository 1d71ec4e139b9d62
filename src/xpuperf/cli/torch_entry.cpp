// xpuperf-torch's half of the commands (cli/torch_entry.h): linked into xpuperf-torch only.

#include "xpuperf/cli/torch_entry.h"

#include "xpuperf/torchrt/vendor_runtime.h"
#include "xpuperf/train/entry.h"
#ifdef XPUPERF_HAVE_INFER
#include "xpuperf/base/conformance.h"
#include "xpuperf/infer/entry.h"
#include "xpuperf/opbench/op_case.h"
#endif

namespace xpuperf::cli {
namespace {

void activate_vendor(const VendorSpec& spec) {
  torchrt::activate_vendor(spec);
}

#ifdef XPUPERF_HAVE_INFER
const TorchEntry kEntry{&train::run_rank, &infer::run_inference, &activate_vendor, &base::run_conformance_rank,
                        &opbench::run_operator_case};
#else
const TorchEntry kEntry{&train::run_rank, nullptr, &activate_vendor, nullptr};
#endif

const bool entry_set = set_torch_entry(&kEntry);

}  // namespace
}  // namespace xpuperf::cli
