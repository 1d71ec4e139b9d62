#pragma once
// Reader for the IDX format of MNIST and Fashion-MNIST (`*-idx3-ubyte`, `*-idx1-ubyte`),
// gzipped or not. Torch-free: it returns the raw bytes and the shape.

#include <cstdint>
#include <string>
#include <vector>

#include "xpuperf/data/data_error.h"

namespace xpuperf::data {

struct IdxArray {
  std::vector<std::int64_t> shape;   // e.g. {60000, 28, 28} for images, {60000} for labels
  std::vector<std::uint8_t> values;  // row-major, unsigned bytes
  std::string path;                  // the file it was read from
};

// Reads one IDX file of unsigned bytes. Throws DataError naming the file and what is wrong
// (missing, truncated, not IDX, not unsigned bytes).
IdxArray read_idx(const std::string& path);

// `<dir>/<prefix>-<kind>-idx<N>-ubyte` with or without `.gz`: the first that exists, or the
// plain name when neither does (so the error names what was looked for).
std::string find_idx_file(const std::string& dir, const std::string& prefix, const std::string& kind, int dims);

// Images and labels of one split, checked against each other.
struct IdxImageSet {
  IdxArray images;  // {n, rows, cols}
  IdxArray labels;  // {n}
};
IdxImageSet read_idx_image_set(const std::string& dir, const std::string& prefix, int num_classes);

}  // namespace xpuperf::data
