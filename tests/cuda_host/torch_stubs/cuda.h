#pragma once
// A stand-in (tests/cuda_host/syntax_check.sh): the CUDA runtime's names that LibTorch's c10/cuda
// headers and NVIDIA's plug-in (vendors/nvidia/plugin) use beyond ../stubs/cuda_runtime.h's.
#include <cuda_runtime.h>
enum { cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3, cudaErrorNotReady = 600 };
typedef int cudaMemcpyKind;
enum cudaStreamCaptureStatus { cudaStreamCaptureStatusNone, cudaStreamCaptureStatusActive };
cudaError_t cudaStreamQuery(cudaStream_t);
cudaError_t cudaStreamGetPriority(cudaStream_t, int*);
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned);
cudaError_t cudaEventQuery(cudaEvent_t);
cudaError_t cudaEventElapsedTime(float*, cudaEvent_t, cudaEvent_t);
enum { cudaHostRegisterPortable = 1 };
cudaError_t cudaHostRegister(void*, size_t, unsigned);
cudaError_t cudaHostUnregister(void*);
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus*);
cudaError_t cudaDeviceSynchronize();
const char* cudaGetErrorName(cudaError_t);
