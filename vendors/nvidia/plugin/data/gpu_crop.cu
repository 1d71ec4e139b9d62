#include <cuda_runtime.h>

#include "data/gpu_crop.h"

namespace xpuperf::nvidia {
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

// A chroma plane's value at luma pixel (x, y): the plane sampled bilinearly at the co-sited
// point, which for 2:1 subsampling is libjpeg's "fancy" triangle upsampling. The factors are the
// file's (2 for a plane of ceil(width / 2) columns), not the planes' size ratio, which differs
// from them for odd sizes and would shift the chroma by up to half a sample at the far edge.
__device__ int chroma_at(const std::uint8_t* plane, const GpuCropParams& p, int x, int y) {
  const int fx_factor = (p.width + p.chroma_width - 1) / p.chroma_width;
  const int fy_factor = (p.height + p.chroma_height - 1) / p.chroma_height;
  const float fx = fminf(fmaxf((x + 0.5f) / fx_factor - 0.5f, 0.f), p.chroma_width - 1.f);
  const float fy = fminf(fmaxf((y + 0.5f) / fy_factor - 0.5f, 0.f), p.chroma_height - 1.f);
  const int x0 = static_cast<int>(fx), y0 = static_cast<int>(fy);
  const int x1 = min(x0 + 1, p.chroma_width - 1), y1 = min(y0 + 1, p.chroma_height - 1);
  const float wx = fx - x0, wy = fy - y0;
  const std::uint8_t* r0 = plane + static_cast<long long>(y0) * p.chroma_pitch;
  const std::uint8_t* r1 = plane + static_cast<long long>(y1) * p.chroma_pitch;
  const float top = r0[x0] + (r0[x1] - r0[x0]) * wx;
  const float bottom = r1[x0] + (r1[x1] - r1[x0]) * wx;
  return __float2int_rn(top + (bottom - top) * wy);
}

__device__ std::uint8_t clamp_byte(int v) {
  return static_cast<std::uint8_t>(min(max(v, 0), 255));
}

// Pixel (x, y) of the decoded image in RGB, converted from YCbCr with libjpeg's fixed-point JFIF
// coefficients (16 fraction bits), so that it rounds as the CPU decoder does.
__device__ void rgb_at(const GpuCropParams& p, int x, int y, int rgb[3]) {
  const int luma = p.luma[static_cast<long long>(y) * p.pitch + x];
  if (!p.cb) {
    rgb[0] = rgb[1] = rgb[2] = luma;
    return;
  }
  const int cb = chroma_at(p.cb, p, x, y) - 128, cr = chroma_at(p.cr, p, x, y) - 128;
  constexpr int half = 1 << 15;
  rgb[0] = clamp_byte(luma + ((91881 * cr + half) >> 16));
  rgb[1] = clamp_byte(luma + ((-22554 * cb - 46802 * cr + half) >> 16));
  rgb[2] = clamp_byte(luma + ((116130 * cb + half) >> 16));
}

__global__ void resize_crops(const GpuCropParams* params, int out_size) {
  const GpuCropParams p = params[blockIdx.y];
  const int pixel = blockIdx.x * blockDim.x + threadIdx.x;
  if (pixel >= out_size * out_size) return;
  const int y = pixel / out_size, x = pixel % out_size;
  const Tap ty = tap(p.y, p.crop_height, out_size, p.height, y);
  const Tap tx = tap(p.x, p.crop_width, out_size, p.width, x);
  int a0[3], b0[3], a1[3], b1[3];
  rgb_at(p, tx.first, ty.first, a0);
  rgb_at(p, tx.second, ty.first, b0);
  rgb_at(p, tx.first, ty.second, a1);
  rgb_at(p, tx.second, ty.second, b1);
  const int wx = tx.weight, wy = ty.weight;
  std::uint8_t* out = p.out + (static_cast<long long>(y) * out_size + (p.flip ? out_size - 1 - x : x)) * 3;
  for (int c = 0; c < 3; ++c) {
    const int top = a0[c] * (256 - wx) + b0[c] * wx;
    const int bottom = a1[c] * (256 - wx) + b1[c] * wx;
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

}  // namespace xpuperf::nvidia
