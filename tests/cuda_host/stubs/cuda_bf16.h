#pragma once
// tests/cuda_host/syntax_check.sh's stand-in (cuda_runtime.h says why).
#include "cuda_runtime.h"
struct __nv_bfloat16 {
  unsigned short x;
};
float __bfloat162float(__nv_bfloat16);
__nv_bfloat16 __float2bfloat16_rn(float);
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
float __low2float(__nv_bfloat162);
float __high2float(__nv_bfloat162);
__nv_bfloat162 __floats2bfloat162_rn(float, float);
