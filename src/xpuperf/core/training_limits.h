#pragma once
// The values each training parameter may take, checked when a config loads (`xpuperf check`,
// `train`, `sweep`), so that a value the runtime would refuse, or worse take (a negative
// learning rate), is named with its file and line before anything starts, with every other
// problem of the plan.

#include "xpuperf/core/config.h"
#include "xpuperf/core/diagnostics.h"

namespace xpuperf {

// Each parameter of `cfg` that has a rule here and a value outside it goes to `diags` at the
// line that set it. A value of the wrong type is left to the merge, which reports it.
void check_training_limits(const Config& cfg, Diagnostics& diags);

}  // namespace xpuperf
