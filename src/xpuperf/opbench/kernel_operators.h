#pragma once
// The operators of the catalogue that xpuperf's own operators (ops/operators.h) also implement, so
// that a device's registered kernels are timed and checked beside ATen's: rms_norm, silu_and_mul
// and argmax, and the xpuperf implementations of layer_norm and cross_entropy.

#include <vector>

#include "xpuperf/opbench/operators.h"

namespace xpuperf::opbench {

// rms_norm, silu_and_mul and argmax, each with ATen's composite as `run` and xpuperf's operator as
// an alternative.
std::vector<OperatorSpec> kernel_operators();

// Adds xpuperf's operator as an alternative to the catalogue's operators it implements.
void add_kernel_alternatives(std::vector<OperatorSpec>& specs);

}  // namespace xpuperf::opbench
