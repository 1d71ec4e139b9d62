#pragma once
// The rest of FlagPerf's operator benchmarks: comparisons, bitwise operators, isinf and isnan,
// where, triu, var_mean, max and min, all, outer, embedding, dropout and native_dropout.

#include <vector>

#include "xpuperf/opbench/operators.h"

namespace xpuperf::opbench {

std::vector<OperatorSpec> more_operators();

}  // namespace xpuperf::opbench
