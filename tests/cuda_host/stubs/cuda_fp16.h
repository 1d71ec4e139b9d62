#pragma once
// tests/cuda_host/syntax_check.sh's stand-in (cuda_runtime.h says why).
#include "cuda_runtime.h"
struct __half {
  unsigned short x;
};
float __half2float(__half);
__half __float2half_rn(float);
