#pragma once
// The kernel behind NVIDIA's JPEG decoder (nvjpeg_decoder.cpp): crops of decoded images resized and
// flipped into a batch. CUDA types stay out of the header.

#include <cstdint>

namespace xpuperf::nvidia {

struct GpuCropParams {
  // A decoded JPEG's planes: luma, `pitch` bytes a row, and its chroma planes (null for a grey
  // image), chroma_width × chroma_height, as the file subsamples them.
  const std::uint8_t* luma = nullptr;
  int pitch = 0, width = 0, height = 0;
  const std::uint8_t* cb = nullptr;
  const std::uint8_t* cr = nullptr;
  int chroma_pitch = 0, chroma_width = 0, chroma_height = 0;
  int x = 0, y = 0, crop_width = 0, crop_height = 0;
  int flip = 0;
  std::uint8_t* out = nullptr;  // out_size × out_size × 3
};

// `params` in device memory, `count` of them; `stream` a cudaStream_t.
void launch_resize_crops(const GpuCropParams* params, int count, int out_size, void* stream);

}  // namespace xpuperf::nvidia
