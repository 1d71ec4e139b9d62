#pragma once
// tests/cuda_host/syntax_check.sh's stand-in (cuda_runtime.h says why).
#include "cuda_runtime.h"
typedef int nvjpegStatus_t;
enum { NVJPEG_STATUS_SUCCESS = 0 };
enum { NVJPEG_MAX_COMPONENT = 4 };
typedef int nvjpegChromaSubsampling_t;
enum { NVJPEG_CSS_UNKNOWN = -1 };
typedef int nvjpegBackend_t;
enum { NVJPEG_BACKEND_DEFAULT = 0, NVJPEG_BACKEND_HARDWARE = 3 };
typedef int nvjpegOutputFormat_t;
enum { NVJPEG_OUTPUT_YUV = 1 };
#define NVJPEG_FLAGS_DEFAULT 0
typedef struct nvjpegHandle* nvjpegHandle_t;
typedef struct nvjpegJpegState* nvjpegJpegState_t;
typedef struct nvjpegJpegStream* nvjpegJpegStream_t;
struct nvjpegImage_t {
  unsigned char* channel[NVJPEG_MAX_COMPONENT];
  size_t pitch[NVJPEG_MAX_COMPONENT];
};
nvjpegStatus_t nvjpegCreateEx(nvjpegBackend_t, void*, void*, unsigned, nvjpegHandle_t*);
nvjpegStatus_t nvjpegDestroy(nvjpegHandle_t);
nvjpegStatus_t nvjpegJpegStateCreate(nvjpegHandle_t, nvjpegJpegState_t*);
nvjpegStatus_t nvjpegJpegStateDestroy(nvjpegJpegState_t);
nvjpegStatus_t nvjpegJpegStreamCreate(nvjpegHandle_t, nvjpegJpegStream_t*);
nvjpegStatus_t nvjpegJpegStreamDestroy(nvjpegJpegStream_t);
nvjpegStatus_t nvjpegGetImageInfo(nvjpegHandle_t, const unsigned char*, size_t, int*, nvjpegChromaSubsampling_t*, int*,
                                  int*);
nvjpegStatus_t nvjpegJpegStreamParseHeader(nvjpegHandle_t, const unsigned char*, size_t, nvjpegJpegStream_t);
nvjpegStatus_t nvjpegDecodeBatchedSupported(nvjpegHandle_t, nvjpegJpegStream_t, int*);
nvjpegStatus_t nvjpegDecodeBatchedInitialize(nvjpegHandle_t, nvjpegJpegState_t, int, int, nvjpegOutputFormat_t);
nvjpegStatus_t nvjpegDecodeBatched(nvjpegHandle_t, nvjpegJpegState_t, const unsigned char* const*, const size_t*,
                                   nvjpegImage_t*, cudaStream_t);
