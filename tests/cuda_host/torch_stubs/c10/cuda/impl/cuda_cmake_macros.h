#pragma once
// A stand-in for the header LibTorch's CUDA build generates (tests/cuda_host/syntax_check.sh).
