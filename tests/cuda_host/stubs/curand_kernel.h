#pragma once
// tests/cuda_host/syntax_check.sh's stand-in (cuda_runtime.h says why).
#include "cuda_runtime.h"
struct curandStatePhilox4_32_10_t {
  unsigned s[8];
};
void curand_init(unsigned long long seed, unsigned long long subsequence, unsigned long long offset,
                 curandStatePhilox4_32_10_t* state);
float4 curand_uniform4(curandStatePhilox4_32_10_t* state);
