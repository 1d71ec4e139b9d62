#include "xpuperf/data/jpeg.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <stdexcept>

#include "xpuperf/core/host_memory.h"

#ifdef XPUPERF_HAVE_TURBOJPEG
#include <turbojpeg.h>
#endif

namespace xpuperf::data {

bool read_file_bytes(const std::string& path, std::vector<std::uint8_t>& out, std::string& error) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    error = std::strerror(errno);
    return false;
  }
  const auto size = static_cast<std::size_t>(in.tellg());
  out.resize(size);
  in.seekg(0);
  if (size > 0 && !in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(size))) {
    error = "read failed";
    return false;
  }
  return true;
}

bool within_pixel_limit(int width, int height, std::int64_t max_pixels, std::string& error) {
  const std::int64_t pixels = static_cast<std::int64_t>(width) * height;
  if (max_pixels <= 0 || pixels <= max_pixels) return true;
  error = "its header claims " + std::to_string(width) + "x" + std::to_string(height) + " pixels, more than the " +
          std::to_string(max_pixels) + " of max_image_pixels (a decompression bomb, or raise the limit)";
  return false;
}

#ifdef XPUPERF_HAVE_TURBOJPEG

bool have_jpeg_codec() {
  return true;
}

JpegCodec::JpegCodec() : decoder_(tjInitDecompress()), encoder_(tjInitCompress()) {
  if (!decoder_ || !encoder_)
    throw std::runtime_error("libjpeg-turbo could not start: " + std::string(tjGetErrorStr()));
}

JpegCodec::~JpegCodec() {
  if (decoder_) tjDestroy(decoder_);
  if (encoder_) tjDestroy(encoder_);
}

bool JpegCodec::decode(const std::uint8_t* data, std::size_t size, RgbImage& out, std::string& error) {
  if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) {
    error = "not a JPEG file (no start-of-image marker)";
    return false;
  }
  if (decode_with_handle(data, size, out, error)) return true;
  // libjpeg-turbo 2.1 leaves a handle that failed mid-header in a state where every later file
  // fails ("Bogus marker length"): one bad file must not spoil the rest, so start a new one.
  tjhandle fresh = tjInitDecompress();
  if (!fresh) throw std::runtime_error("libjpeg-turbo could not start: " + std::string(tjGetErrorStr()));
  tjDestroy(decoder_);
  decoder_ = fresh;
  return false;
}

bool JpegCodec::read_header(const std::uint8_t* data, std::size_t size, int& width, int& height, std::string& error) {
  int subsampling = 0, colourspace = 0;
  if (size >= 4 && data[0] == 0xFF && data[1] == 0xD8 &&
      tjDecompressHeader3(decoder_, data, static_cast<unsigned long>(size), &width, &height, &subsampling,
                          &colourspace) == 0 &&
      width > 0 && height > 0)
    return true;
  error = size >= 4 && data[0] == 0xFF && data[1] == 0xD8 ? std::string(tjGetErrorStr2(decoder_))
                                                          : "not a JPEG file (no start-of-image marker)";
  // As after a failed decode: a fresh handle for the next file.
  tjhandle fresh = tjInitDecompress();
  if (!fresh) throw std::runtime_error("libjpeg-turbo could not start: " + std::string(tjGetErrorStr()));
  tjDestroy(decoder_);
  decoder_ = fresh;
  return false;
}

bool JpegCodec::decode_with_handle(const std::uint8_t* data, std::size_t size, RgbImage& out, std::string& error) {
  int width = 0, height = 0, subsampling = 0, colourspace = 0;
  if (tjDecompressHeader3(decoder_, data, static_cast<unsigned long>(size), &width, &height, &subsampling,
                          &colourspace) != 0) {
    error = tjGetErrorStr2(decoder_);
    return false;
  }
  if (width <= 0 || height <= 0) {
    error = "an image of " + std::to_string(width) + "x" + std::to_string(height) + " pixels";
    return false;
  }
  if (!within_pixel_limit(width, height, max_pixels_, error)) return false;
  out.width = width;
  out.height = height;
  // With no limit (max_image_pixels 0) a header may still claim more than memory holds: refused
  // undecoded rather than zero-filling gigabytes first.
  // Read only for large images: /proc/meminfo is not to be read once a decoded file.
  const std::int64_t bytes = static_cast<std::int64_t>(width) * height * 3;
  const std::int64_t available = bytes > (std::int64_t{256} << 20) ? host_memory_available_bytes() : 0;
  if (available > 0 && bytes > available / 2) {
    error = "its header claims " + std::to_string(width) + "x" + std::to_string(height) + " pixels, " +
            std::to_string(bytes >> 20) + " MiB decoded, more than half of this machine's available memory " +
            std::to_string(available >> 20) + " MiB";
    return false;
  }
  try {
    out.pixels.resize(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
  } catch (const std::bad_alloc&) {
    // No limit (max_image_pixels 0) and a header that claims more than memory holds.
    error = "its header claims " + std::to_string(width) + "x" + std::to_string(height) +
            " pixels, more than this machine's memory holds decoded (set max_image_pixels to refuse such files "
            "undecoded)";
    out.pixels = {};
    return false;
  }
  // A truncated file decodes with a warning (the missing rows grey); ImageNet pipelines reject it.
  if (tjDecompress2(decoder_, data, static_cast<unsigned long>(size), out.pixels.data(), width, 0, height, TJPF_RGB,
                    TJFLAG_STOPONWARNING) != 0) {
    error = tjGetErrorStr2(decoder_);
    return false;
  }
  return true;
}

std::vector<std::uint8_t> JpegCodec::encode(const RgbImage& image, int quality, bool progressive,
                                            ChromaSampling chroma) {
  // A handle that has written a progressive file writes broken baseline ones after it
  // (libjpeg-turbo 2.1 keeps the scan script): progressive files get a handle of their own.
  std::unique_ptr<void, int (*)(tjhandle)> own(progressive ? tjInitCompress() : nullptr, tjDestroy);
  tjhandle encoder = progressive ? own.get() : encoder_;
  if (!encoder) throw std::runtime_error("libjpeg-turbo could not start: " + std::string(tjGetErrorStr()));
  const int sampling = chroma == ChromaSampling::s422   ? TJSAMP_422
                       : chroma == ChromaSampling::s444 ? TJSAMP_444
                       : chroma == ChromaSampling::grey ? TJSAMP_GRAY
                                                        : TJSAMP_420;
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  if (tjCompress2(encoder, image.pixels.data(), image.width, 0, image.height, TJPF_RGB, &buffer, &size, sampling,
                  quality, progressive ? TJFLAG_PROGRESSIVE : 0) != 0)
    throw std::runtime_error("libjpeg-turbo could not encode an image: " + std::string(tjGetErrorStr2(encoder)));
  std::vector<std::uint8_t> out(buffer, buffer + size);
  tjFree(buffer);
  return out;
}

#else

namespace {
const char* kMissing = "this xpuperf was built without libjpeg-turbo (Debian: libturbojpeg0-dev)";
}

bool have_jpeg_codec() {
  return false;
}
JpegCodec::JpegCodec() {
  throw std::runtime_error(kMissing);
}
JpegCodec::~JpegCodec() = default;
bool JpegCodec::decode(const std::uint8_t*, std::size_t, RgbImage&, std::string& error) {
  error = kMissing;
  return false;
}
bool JpegCodec::decode_with_handle(const std::uint8_t*, std::size_t, RgbImage&, std::string& error) {
  error = kMissing;
  return false;
}
bool JpegCodec::read_header(const std::uint8_t*, std::size_t, int&, int&, std::string& error) {
  error = kMissing;
  return false;
}
std::vector<std::uint8_t> JpegCodec::encode(const RgbImage&, int, bool, ChromaSampling) {
  throw std::runtime_error(kMissing);
}

#endif

}  // namespace xpuperf::data
