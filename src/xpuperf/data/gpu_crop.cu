#include <cuda_runtime.h>

#include "xpuperf/data/gpu_crop.h"

namespace xpuperf::data {
namespace {

struct Tap {
  int first, second, weight;
};

// resize_crop's taps (image_transforms.cpp), computed per pixel: the same double arithmetic,
// written with the _rn intrinsics so that no multiply-add is fused, hence the same bytes as the CPU.
__device__ Tap tap(int start, int extent, int out, int limit, int i) {
  const double scale = __ddiv_rn(static_cast<double>(extent), static_cast<double>(out));
  double f = __dadd_rn(__dadd_rn(static_cast<double>(start), __dmul_rn(i + 0.5, scale)), -0.5);
  f = fmin(fmax(f, 0.0), limit - 1.0);
  const int a = static_cast<int>(f);
  return {a, min(a + 1, limit - 1), static_cast<int>(round(__dmul_rn(__dadd_rn(f, -static_cast<double>(a)), 256.0)))};
}

__global__ void resize_crops(const GpuCropParams* params, int out_size) {
  const GpuCropParams p = params[blockIdx.y];
  const int pixel = blockIdx.x * blockDim.x + threadIdx.x;
  if (pixel >= out_size * out_size) return;
  const int y = pixel / out_size, x = pixel % out_size;
  const Tap ty = tap(p.y, p.crop_height, out_size, p.height, y);
  const Tap tx = tap(p.x, p.crop_width, out_size, p.width, x);
  const std::uint8_t* r0 = p.src + static_cast<long long>(ty.first) * p.pitch;
  const std::uint8_t* r1 = p.src + static_cast<long long>(ty.second) * p.pitch;
  const int a = tx.first * 3, b = tx.second * 3, wx = tx.weight, wy = ty.weight;
  std::uint8_t* out = p.out + (static_cast<long long>(y) * out_size + (p.flip ? out_size - 1 - x : x)) * 3;
  for (int c = 0; c < 3; ++c) {
    const int top = r0[a + c] * (256 - wx) + r0[b + c] * wx;
    const int bottom = r1[a + c] * (256 - wx) + r1[b + c] * wx;
    out[c] = static_cast<std::uint8_t>((top * (256 - wy) + bottom * wy + (1 << 15)) >> 16);
  }
}

}  // namespace

void launch_resize_crops(const GpuCropParams* params, int count, int out_size, void* stream) {
  if (count <= 0) return;
  constexpr int threads = 256;
  const dim3 grid((out_size * out_size + threads - 1) / threads, count);
  resize_crops<<<grid, threads, 0, static_cast<cudaStream_t>(stream)>>>(params, out_size);
}

}  // namespace xpuperf::data
