#include "xpuperf/data/idx.h"

#include <zlib.h>

#include <filesystem>
#include <memory>

namespace xpuperf::data {
namespace fs = std::filesystem;

namespace {

// gzread reads plain files too, so one path serves both.
struct GzFile {
  gzFile file;
  explicit GzFile(const std::string& path) : file(gzopen(path.c_str(), "rb")) {}
  ~GzFile() {
    if (file) gzclose(file);
  }
  // Reads exactly `size` bytes; false when the file ends first or is corrupt.
  bool read(void* out, std::size_t size) {
    auto* p = static_cast<unsigned char*>(out);
    while (size > 0) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(size, 1u << 30));
      const int n = gzread(file, p, chunk);
      if (n <= 0) return false;
      p += n;
      size -= static_cast<std::size_t>(n);
    }
    return true;
  }
};

std::uint32_t big_endian(const unsigned char* b) {
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]};
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw DataError(path + ": file not found");
  GzFile in(path);
  if (!in.file) throw DataError(path + ": cannot be opened");
  unsigned char magic[4];
  if (!in.read(magic, 4)) throw DataError(path + ": empty or truncated (no IDX header)");
  if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0 || magic[3] > 4)
    throw DataError(path + ": not an IDX file (bad magic number)");
  if (magic[2] != 0x08) throw DataError(path + ": IDX element type is not unsigned bytes");
  IdxArray out;
  out.path = path;
  std::size_t count = 1;
  for (int d = 0; d < magic[3]; ++d) {
    unsigned char dim[4];
    if (!in.read(dim, 4)) throw DataError(path + ": truncated IDX header");
    const std::uint32_t size = big_endian(dim);
    if (size == 0 || size > (1u << 28)) throw DataError(path + ": implausible dimension " + std::to_string(size));
    out.shape.push_back(size);
    count *= size;
    if (count > (std::size_t{1} << 34)) throw DataError(path + ": implausibly large");
  }
  out.values.resize(count);
  if (!in.read(out.values.data(), count))
    throw DataError(path + ": truncated: the header promises " + std::to_string(count) + " values");
  unsigned char extra;
  if (in.read(&extra, 1)) throw DataError(path + ": longer than its header says (not this IDX layout?)");
  return out;
}

std::string find_idx_file(const std::string& dir, const std::string& prefix, const std::string& kind, int dims) {
  const std::string plain = (fs::path(dir) / (prefix + "-" + kind + "-idx" + std::to_string(dims) + "-ubyte")).string();
  std::error_code ec;
  if (fs::exists(plain + ".gz", ec)) return plain + ".gz";
  return plain;
}

IdxImageSet read_idx_image_set(const std::string& dir, const std::string& prefix, int num_classes) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw DataError("data folder '" + dir + "' does not exist");
  IdxImageSet set;
  set.images = read_idx(find_idx_file(dir, prefix, "images", 3));
  set.labels = read_idx(find_idx_file(dir, prefix, "labels", 1));
  if (set.images.shape.size() != 3) throw DataError(set.images.path + ": expected 3 dimensions (n, rows, cols)");
  if (set.labels.shape.size() != 1) throw DataError(set.labels.path + ": expected 1 dimension (n)");
  if (set.images.shape[0] != set.labels.shape[0])
    throw DataError(set.images.path + " has " + std::to_string(set.images.shape[0]) + " images but " + set.labels.path +
                    " has " + std::to_string(set.labels.shape[0]) + " labels");
  for (std::uint8_t label : set.labels.values)
    if (label >= num_classes)
      throw DataError(set.labels.path + ": label " + std::to_string(label) + " is outside 0.." +
                      std::to_string(num_classes - 1) + " (not this dataset?)");
  return set;
}

}  // namespace xpuperf::data
