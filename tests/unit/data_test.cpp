#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <set>

#include "test_util.h"
#include "xpuperf/data/idx.h"
#include "xpuperf/data/image_folder.h"
#include "xpuperf/data/shard_sampler.h"

namespace xpuperf::data {
namespace {

std::string idx_bytes(const std::vector<std::uint32_t>& shape, const std::vector<std::uint8_t>& values) {
  std::string out = {0, 0, 0x08, static_cast<char>(shape.size())};
  for (std::uint32_t d : shape)
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((d >> shift) & 0xff));
  out.append(values.begin(), values.end());
  return out;
}

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

std::string error_of(const std::string& path) {
  try {
    read_idx(path);
  } catch (const DataError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Idx, ReadsPlainAndGzippedFiles) {
  test::TempDir dir;
  const std::string bytes = idx_bytes({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  const std::string plain = dir.write("a-idx3-ubyte", bytes);
  write_gz(dir.path() + "/b-idx3-ubyte.gz", bytes);
  for (const std::string& path : {plain, dir.path() + "/b-idx3-ubyte.gz"}) {
    const IdxArray a = read_idx(path);
    EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 2, 3}));
    EXPECT_EQ(a.values.size(), 12u);
    EXPECT_EQ(a.values[11], 12);
  }
}

TEST(Idx, BadFilesAreClearErrors) {
  test::TempDir dir;
  EXPECT_EQ(error_of(dir.path() + "/none"), dir.path() + "/none: file not found");
  EXPECT_NE(error_of(dir.write("empty", "")).find("empty or truncated"), std::string::npos);
  EXPECT_NE(error_of(dir.write("text", "hello world, not idx")).find("not an IDX file"), std::string::npos);
  std::string floats = idx_bytes({1}, {0, 0, 0, 0});
  floats[2] = 0x0d;
  EXPECT_NE(error_of(dir.write("floats", floats)).find("not unsigned bytes"), std::string::npos);
  const std::string full = idx_bytes({10, 28, 28}, std::vector<std::uint8_t>(10 * 28 * 28, 7));
  EXPECT_NE(error_of(dir.write("cut", full.substr(0, full.size() - 100))).find("truncated"), std::string::npos);
  write_gz(dir.path() + "/cut.gz", full.substr(0, full.size() - 100));
  EXPECT_NE(error_of(dir.path() + "/cut.gz").find("truncated"), std::string::npos);
  EXPECT_NE(error_of(dir.write("long", full + "xx")).find("longer than its header"), std::string::npos);
}

TEST(Idx, ImageSetsAreCheckedTogether) {
  test::TempDir dir;
  dir.write("train-images-idx3-ubyte", idx_bytes({3, 2, 2}, std::vector<std::uint8_t>(12, 1)));
  dir.write("train-labels-idx1-ubyte", idx_bytes({3}, {0, 9, 4}));
  const IdxImageSet set = read_idx_image_set(dir.path(), "train", 10);
  EXPECT_EQ(set.images.shape[0], 3);
  EXPECT_EQ(set.labels.values[1], 9);

  dir.write("bad-images-idx3-ubyte", idx_bytes({3, 2, 2}, std::vector<std::uint8_t>(12, 1)));
  dir.write("bad-labels-idx1-ubyte", idx_bytes({2}, {0, 1}));
  EXPECT_THROW(read_idx_image_set(dir.path(), "bad", 10), DataError);
  dir.write("big-images-idx3-ubyte", idx_bytes({1, 2, 2}, std::vector<std::uint8_t>(4, 1)));
  dir.write("big-labels-idx1-ubyte", idx_bytes({1}, {42}));
  try {
    read_idx_image_set(dir.path(), "big", 10);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("label 42 is outside 0..9"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_idx_image_set(dir.path() + "/nope", "train", 10), DataError);
}

TEST(Idx, PrefersTheGzippedFile) {
  test::TempDir dir;
  dir.write("t10k-images-idx3-ubyte.gz", "x");
  EXPECT_EQ(find_idx_file(dir.path(), "t10k", "images", 3), dir.path() + "/t10k-images-idx3-ubyte.gz");
  EXPECT_EQ(find_idx_file(dir.path(), "t10k", "labels", 1), dir.path() + "/t10k-labels-idx1-ubyte");
}

TEST(ShardSampler, RanksShareOneShuffleAndSplitIt) {
  const std::int64_t n = 103;
  std::multiset<std::int64_t> seen;
  std::size_t sizes = 0;
  for (int rank = 0; rank < 4; ++rank) {
    const auto mine = shard_indices({n, rank, 4, true, 7, true}, 3);
    if (rank == 0) sizes = mine.size();
    EXPECT_EQ(mine.size(), sizes);  // equal step counts on every rank
    EXPECT_EQ(static_cast<std::int64_t>(mine.size()), padded_shard_size(n, 4));
    seen.insert(mine.begin(), mine.end());
  }
  EXPECT_EQ(seen.size(), 104u);  // 103 samples + 1 repeated to pad
  for (std::int64_t i = 0; i < n; ++i) EXPECT_GE(seen.count(i), 1u) << i;
}

TEST(ShardSampler, ShuffleDependsOnEpochAndSeedOnly) {
  const ShardSpec spec{1000, 0, 1, true, 42, true};
  EXPECT_EQ(shard_indices(spec, 1), shard_indices(spec, 1));
  EXPECT_NE(shard_indices(spec, 1), shard_indices(spec, 2));
  ShardSpec other = spec;
  other.seed = 43;
  EXPECT_NE(shard_indices(spec, 1), shard_indices(other, 1));
  // A fixed sequence: the order must not change between builds or standard libraries.
  const auto first = shard_indices({10, 0, 1, true, 1, true}, 0);
  EXPECT_EQ(first, shard_indices({10, 0, 1, true, 1, true}, 0));
}

TEST(ShardSampler, EvaluationSplitCountsEverySampleOnce) {
  std::multiset<std::int64_t> seen;
  for (int rank = 0; rank < 3; ++rank) {
    const auto mine = shard_indices({10, rank, 3, false, 0, false}, 0);
    seen.insert(mine.begin(), mine.end());
  }
  EXPECT_EQ(seen.size(), 10u);
  for (std::int64_t i = 0; i < 10; ++i) EXPECT_EQ(seen.count(i), 1u);
  EXPECT_EQ(shard_indices({5, 0, 1, false, 0, false}, 0), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace xpuperf::data

namespace xpuperf::data {
namespace {

TEST(ImageFolder, ClassesAndImagesAreSortedLikeTorchvision) {
  test::TempDir dir;
  dir.write("val/n02/b.JPEG", "x");
  dir.write("val/n02/a.jpg", "x");
  dir.write("val/n02/notes.txt", "not an image");
  dir.write("val/n01/z.png", "x");
  const ImageFolder f = list_image_folder(dir.path() + "/val");
  ASSERT_EQ(f.classes, (std::vector<std::string>{"n01", "n02"}));
  ASSERT_EQ(f.images.size(), 3u);
  EXPECT_EQ(f.images[0].path, dir.path() + "/val/n01/z.png");
  EXPECT_EQ(f.images[0].label, 0);
  EXPECT_EQ(f.images[1].path, dir.path() + "/val/n02/a.jpg");
  EXPECT_EQ(f.images[2].label, 1);
}

TEST(ImageFolder, MissingOrEmptyFoldersAreClearErrors) {
  test::TempDir dir;
  try {
    list_image_folder(dir.path() + "/nope");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("'" + dir.path() + "/nope' does not exist"), std::string::npos) << e.what();
  }
  dir.write("flat/a.jpg", "x");
  EXPECT_THROW(list_image_folder(dir.path() + "/flat"), DataError);  // no class folders
  dir.write("val/n01/readme.txt", "x");
  try {
    list_image_folder(dir.path() + "/val");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("n01' has no images"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xpuperf::data
