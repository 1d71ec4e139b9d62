#pragma once
// A stand-in for the CUDA toolkit's headers, for tests/cuda_host/syntax_check.sh only: enough of
// CUDA's names, as host C++, for g++ to parse and instantiate the kernels' code on a machine without
// nvcc. Nothing here runs.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__
#define __constant__
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)

struct uint2 {
  unsigned x, y;
};
struct uint4 {
  unsigned x, y, z, w;
};
struct float4 {
  float x, y, z, w;
};
struct float2 {
  float x, y;
};
struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;

template <typename T>
T __shfl_xor_sync(unsigned, T v, int, int = 32) {
  return v;
}
template <typename T>
T __shfl_sync(unsigned, T v, int, int = 32) {
  return v;
}
template <typename T>
T __shfl_down_sync(unsigned, T v, unsigned, int = 32) {
  return v;
}
template <typename T>
T __ldcs(const T* p) {
  return *p;
}
template <typename T>
T __ldg(const T* p) {
  return *p;
}
inline void __syncthreads() {}
inline int __syncthreads_or(int v) {
  return v;
}
inline void __threadfence() {}
template <typename T>
T atomicAdd(T* p, T v) {
  T old = *p;
  *p += v;
  return old;
}
template <typename A, typename B>
std::common_type_t<A, B> max(A a, B b) {
  return a > b ? a : b;
}
template <typename A, typename B>
std::common_type_t<A, B> min(A a, B b) {
  return a < b ? a : b;
}
inline float rsqrtf(float x) {
  return 1.0f / std::sqrt(x);
}
inline float __fmul_rn(float a, float b) {
  return a * b;
}
inline float __fadd_rn(float a, float b) {
  return a + b;
}
inline double __dadd_rn(double a, double b) {
  return a + b;
}
inline double __dmul_rn(double a, double b) {
  return a * b;
}
inline double __ddiv_rn(double a, double b) {
  return a / b;
}
inline int __float2int_rn(float x) {
  return static_cast<int>(std::nearbyint(x));
}
using std::isnan;

typedef int cudaError_t;
enum { cudaSuccess = 0 };
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
enum { cudaMemcpyHostToDevice = 1, cudaStreamNonBlocking = 1, cudaEventDefault = 0, cudaEventDisableTiming = 2 };
const char* cudaGetErrorString(cudaError_t);
cudaError_t cudaSetDevice(int);
cudaError_t cudaGetDeviceCount(int*);
cudaError_t cudaMalloc(void**, size_t);
cudaError_t cudaFree(void*);
cudaError_t cudaMallocHost(void**, size_t);
cudaError_t cudaFreeHost(void*);
cudaError_t cudaMemcpyAsync(void*, const void*, size_t, int, cudaStream_t);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaStreamDestroy(cudaStream_t);
cudaError_t cudaDeviceGetStreamPriorityRange(int*, int*);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t*, unsigned, int);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t*, unsigned);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t);
cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaEventDestroy(cudaEvent_t);
cudaError_t cudaGetLastError();
cudaError_t cudaGetDevice(int*);
cudaError_t cudaMemGetInfo(size_t*, size_t*);
enum cudaDeviceAttr { cudaDevAttrComputeCapabilityMajor, cudaDevAttrMultiProcessorCount };
cudaError_t cudaDeviceGetAttribute(int*, cudaDeviceAttr, int);
enum cudaLaunchAttributeID { cudaLaunchAttributeProgrammaticStreamSerialization };
struct cudaLaunchAttributeValue {
  int programmaticStreamSerializationAllowed;
};
struct cudaLaunchAttribute {
  cudaLaunchAttributeID id;
  cudaLaunchAttributeValue val;
};
struct cudaLaunchConfig_t {
  dim3 gridDim, blockDim;
  size_t dynamicSmemBytes;
  cudaStream_t stream;
  cudaLaunchAttribute* attrs;
  unsigned numAttrs;
};
template <typename... P, typename... A>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t*, void (*)(P...), A&&...) {
  return 0;
}
