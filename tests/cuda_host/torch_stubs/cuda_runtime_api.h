#pragma once
// A stand-in (tests/cuda_host/syntax_check.sh): what LibTorch's c10/cuda headers take from CUDA.
#include <cuda.h>
