#pragma once
// JPEG decoding and encoding on the CPU through libjpeg-turbo (Debian's libturbojpeg): the image
// pipeline's decoder where no device decoder is used, and the data tool's encoder. Torch-free.
// A codec holds a libjpeg-turbo handle, which is not thread-safe: one codec a thread.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace xpuperf::data {

struct RgbImage {
  int width = 0, height = 0;
  std::vector<std::uint8_t> pixels;  // height × width × 3, row-major
};

// Pillow's decompression-bomb guard, rounded: a small file whose header claims more pixels than
// this is refused before any memory is taken for it.
constexpr std::int64_t kDefaultMaxImagePixels = 100'000'000;

// True when width × height is within max_pixels (<= 0: no limit); else false with `error` saying so.
bool within_pixel_limit(int width, int height, std::int64_t max_pixels, std::string& error);

// Whether this build has libjpeg-turbo; without it every call fails with a message saying so.
bool have_jpeg_codec();

// How an encoded file samples its chroma: 4:2:0 (cameras, ImageNet), 4:2:2, 4:4:4, or no chroma
// at all (a one-component grey file).
enum class ChromaSampling { s420, s422, s444, grey };

class JpegCodec {
 public:
  JpegCodec();
  ~JpegCodec();
  JpegCodec(const JpegCodec&) = delete;
  JpegCodec& operator=(const JpegCodec&) = delete;

  // Decodes to RGB. A corrupt, truncated or non-JPEG input, or one above the pixel limit, returns
  // false with `error` saying why (libjpeg-turbo's words); it never throws for bad data, and a
  // failure leaves the codec as good for the next file as a new one.
  bool decode(const std::uint8_t* data, std::size_t size, RgbImage& out, std::string& error);
  // The image's size from its header, without decoding it; false with `error` for what is not a
  // JPEG or has no readable header.
  bool read_header(const std::uint8_t* data, std::size_t size, int& width, int& height, std::string& error);
  // Images whose header claims more pixels are refused before decoding (<= 0: no limit).
  void set_max_pixels(std::int64_t max_pixels) { max_pixels_ = max_pixels; }
  // Encodes RGB at `quality` (1–100, 4:2:0 chroma as cameras and ImageNet's files do, unless
  // `chroma` says otherwise); baseline, or progressive (as some of ImageNet's files are).
  std::vector<std::uint8_t> encode(const RgbImage& image, int quality, bool progressive = false,
                                   ChromaSampling chroma = ChromaSampling::s420);

 private:
  bool decode_with_handle(const std::uint8_t* data, std::size_t size, RgbImage& out, std::string& error);

  void* decoder_ = nullptr;
  void* encoder_ = nullptr;
  std::int64_t max_pixels_ = kDefaultMaxImagePixels;
};

// Reads a whole file; false with `error` when it cannot.
bool read_file_bytes(const std::string& path, std::vector<std::uint8_t>& out, std::string& error);

}  // namespace xpuperf::data
