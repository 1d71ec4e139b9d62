#pragma once
// Measure options for the opbench tests: a few calls, tiny rotation and flush, no minimum time:
// that a row runs and what it holds, not a figure.

#include "xpuperf/opbench/op_measure.h"

namespace xpuperf::opbench {

inline MeasureOptions quick_options() {
  MeasureOptions o;
  o.warmup = 1;
  o.samples = 3;
  o.min_seconds = 0;
  o.rotate_bytes = o.flush_bytes = 1 << 16;
  return o;
}

}  // namespace xpuperf::opbench
