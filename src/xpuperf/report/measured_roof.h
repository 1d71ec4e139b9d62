#pragma once
// The roof this machine measured: a run's base cases on one chip (core/roofline.h). Operator rows
// are placed on it beside the datasheet's, so that a row's fraction says how far it is from what
// the chip does here, not from a figure of the brochure.

#include <string>

#include "xpuperf/core/roofline.h"
#include "xpuperf/report/summary_model.h"

namespace xpuperf::report {

// From the base cases of `summary` on `hardware` ("" for any): computation-<PRECISION>'s headline
// (median TFLOP/s) per precision, and main_memory-bandwidth's fastest of its read, copy and triad
// medians, each averaged over the ok rounds whose results check passed. Empty when there are none.
Roof measured_roof(const Summary& summary, const std::string& hardware);

}  // namespace xpuperf::report
